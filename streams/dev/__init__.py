"""The dev cluster: a local broker (`broker`), one app and its worker processes on it (`cluster`), and the
decisions read back (`decisions`); what `neardup demo`, the integration and reliability tests and the
stream benches share. The names below are the ones they use."""

from streams.dev.broker import (
    LOCAL_KAFKA,
    READY_LINE,
    ROOT,
    VERSION_LINE,
    Broker,
    BrokerUnavailable,
    ClusterError,
    free_port,
    missing_prerequisites,
    reachable,
    restart_broker,
    start_broker,
    stop_broker,
)
from streams.dev.cluster import Cluster, WorkerExited
from streams.dev.decisions import Decision, Record, all_complete, keep_latest, latest_by_url

__all__ = ["LOCAL_KAFKA", "READY_LINE", "ROOT", "VERSION_LINE", "Broker", "BrokerUnavailable", "Cluster",
           "ClusterError", "Decision", "Record", "WorkerExited", "all_complete", "free_port", "keep_latest",
           "latest_by_url", "missing_prerequisites", "reachable", "restart_broker", "start_broker", "stop_broker"]

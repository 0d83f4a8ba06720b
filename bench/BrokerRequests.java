import com.sun.tools.attach.VirtualMachine;
import java.lang.management.ManagementFactory;
import java.util.Set;
import java.util.TreeMap;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * The requests a running Kafka broker has served since it started, by API, and the CPU time of its
 * request handler and network threads: what bench/stream_phase.py reads before and after a phase
 * (`java bench/BrokerRequests.java PID`, a single-file program). It attaches to the broker's JVM (same
 * user), starts its local JMX agent if needed, and prints one line per API, "requests NAME COUNT",
 * then "thread-cpu-ms GROUP MS" for the broker's request handlers (data-plane-kafka-request-handler),
 * network processors (data-plane-kafka-network-thread) and all its other threads together.
 */
public final class BrokerRequests {
    public static void main(String[] args) throws Exception {
        VirtualMachine vm = VirtualMachine.attach(args[0]);
        String address;
        try {
            address = vm.startLocalManagementAgent();
        } finally {
            vm.detach();
        }
        try (JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
            MBeanServerConnection server = connector.getMBeanServerConnection();
            TreeMap<String, Long> counts = new TreeMap<>();
            Set<ObjectName> names = server.queryNames(
                new ObjectName("kafka.network:type=RequestMetrics,name=RequestsPerSec,*"), null);
            for (ObjectName name : names) {
                String api = name.getKeyProperty("request");
                long count = ((Number) server.getAttribute(name, "Count")).longValue();
                counts.merge(api, count, Long::sum);  // one meter per API version
            }
            counts.forEach((api, count) -> System.out.println("requests " + api + " " + count));
            java.lang.management.ThreadMXBean threads = ManagementFactory.newPlatformMXBeanProxy(
                server, ManagementFactory.THREAD_MXBEAN_NAME, java.lang.management.ThreadMXBean.class);
            TreeMap<String, Long> cpu = new TreeMap<>();
            for (java.lang.management.ThreadInfo info : threads.getThreadInfo(threads.getAllThreadIds())) {
                if (info == null) {
                    continue;
                }
                long nanos = threads.getThreadCpuTime(info.getThreadId());
                if (nanos < 0) {
                    continue;
                }
                String name = info.getThreadName();
                String group = name.contains("request-handler") ? "request-handlers"
                    : name.contains("network-thread") ? "network-threads" : "other";
                cpu.merge(group, nanos / 1_000_000, Long::sum);
            }
            cpu.forEach((group, ms) -> System.out.println("thread-cpu-ms " + group + " " + ms));
        }
    }
}

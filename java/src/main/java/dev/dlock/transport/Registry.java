package dev.dlock.transport;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Which quorum node reaches each server, for one manager (Go's Registry in identity.go): a
 * server two nodes reach is refused, naming both. See {@link Identity}.
 */
public final class Registry {
    /** The node reaching a server, and how many of that node's places last saw it. */
    private record Owner(int node, int servers) {}

    private final List<String> names;
    private final Map<String, Owner> owners = new HashMap<>();
    private final Map<Integer, String> refused = new HashMap<>();
    private final boolean[] met;
    private String refusal = "";

    /**
     * The registry of the nodes named names, in order.
     *
     * @param names the nodes' names
     */
    public Registry(List<String> names) {
        this.names = new ArrayList<>(names);
        this.met = new boolean[names.size()];
    }

    /** @return why every acquisition is refused: two nodes reach one server ("" while none do) */
    public synchronized String refusal() {
        return refusal;
    }

    /**
     * @param node a node's index
     * @return why node is refused, if it reaches a server another node reaches ("" if not)
     */
    public synchronized String refused(int node) {
        return refused.getOrDefault(node, "");
    }

    /**
     * Node was met: a connection of it identified its server (or was refused), or a call of it
     * ended (a node down counts: nothing to identify until it is back).
     *
     * @param node a node's index
     */
    public synchronized void met(int node) {
        if (node >= 0 && node < met.length) {
            met[node] = true;
        }
    }

    /**
     * @return every node was met once (a manager's first lock waits for this, so that a
     *     duplicate's first call is the one refused)
     */
    public synchronized boolean allMet() {
        for (boolean m : met) {
            if (!m) {
                return false;
            }
        }
        return true;
    }

    /**
     * Node sees runId where it saw previous (a restart, another master after a failover): the
     * new one claimed and the old let go; or why not (another node holds it).
     */
    synchronized String claim(int node, String runId, String previous) {
        Owner o = owners.get(runId);
        if (o != null && o.node() != node) {
            String why = duplicate(o.node(), node, runId);
            if (refusal.isEmpty()) {
                refusal = why;
            }
            refused.put(node, why);
            return why;
        }
        owners.put(runId, new Owner(node, (o == null ? 0 : o.servers()) + 1));
        if (!previous.isEmpty()) {
            Owner p = owners.get(previous);
            if (p != null && p.servers() > 1) {
                owners.put(previous, new Owner(p.node(), p.servers() - 1));
            } else {
                owners.remove(previous);
            }
        }
        return "";
    }

    /** The refusal's words: both nodes in the order given, whichever connected first. */
    private String duplicate(int a, int b, String runId) {
        int first = Math.min(a, b);
        int second = Math.max(a, b);
        return "nodes " + names.get(first) + " and " + names.get(second) + " are the same server (run_id " + runId
                + "): list each server once";
    }
}

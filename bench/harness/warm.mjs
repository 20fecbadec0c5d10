// The warm-up every Node contender gets before its scenario (redlock.mjs, dlock_node.mjs): up to
// 2,000 untimed acquire+release cycles or 2 s, on keys of its own. V8 compiles a hot path only
// after some hundreds of calls (node-redlock's p50 halves over its first ~600 cycles, dlock's
// Node client's falls by a third over ~1,500), and a service that takes locks runs warm: timing
// a fresh process's first 300 cycles would measure the compiler, not the lock.
export async function warm(cycle) {
  const end = Date.now() + 2000;
  for (let i = 0; i < 2000 && Date.now() < end; i++) {
    await cycle(i);
  }
}

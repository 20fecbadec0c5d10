/**
 * Every test file imports this first (package.test.ts checks it): a file still running after
 * FILE_LIMIT ms fails instead of hanging the suite, whatever holds it (a test waiting on servers
 * that are gone, a handle left open after the last test). Each test has its own limit too
 * (`--test-timeout` in package.json, or the test's `timeout`); this one catches what runs
 * outside a test. The timer does not keep a finished file alive.
 */
const FILE_LIMIT = 300_000;

const watchdog = setTimeout(() => {
  console.error(`${process.argv[1] ?? "a test file"} still running after ${FILE_LIMIT / 1000} s: failing it`);
  process.exit(1);
}, FILE_LIMIT);
watchdog.unref();

/**
 * npm's `prepare`: runs when the package is installed from a directory or a git URL (`npm install
 * <clone>/node`), packed (`npm pack`), or set up in this checkout (`npm ci`). A clone has the
 * sources, not dist/ (git ignores it), and npm installs no devDependencies for a directory it
 * links: so the build's own dependencies (TypeScript) are installed here first when missing,
 * from package-lock.json, then dist/ is built. In this checkout, after `npm ci`, it only builds.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * The environment for a nested npm: without the npm_* variables of the install that runs us
 * (its project, its lifecycle and package fields), which would make the nested npm act on the
 * app instead of this package; the registry, cache and user config are kept.
 */
function environment() {
  const kept = new Set(["npm_config_cache", "npm_config_registry", "npm_config_userconfig", "npm_config_globalconfig"]);
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("npm_") || kept.has(key)));
}

function npm(...args) {
  // The npm that runs this script (npm_execpath), else the one on the PATH.
  const cli = process.env.npm_execpath;
  const [command, argv] = cli ? [process.execPath, [cli, ...args]] : ["npm", args];
  const done = spawnSync(command, argv, { cwd: here, stdio: "inherit", env: environment() });
  if (done.status !== 0) {
    console.error(`dlock: npm ${args.join(" ")} failed in ${here} (exit ${done.status ?? done.signal})`);
    process.exit(1);
  }
}

const built = (path) => existsSync(join(here, "node_modules", path));
if (!built("typescript/bin/tsc") || !built("@redis/client/package.json")) {
  npm("ci", "--include=dev", "--ignore-scripts", "--no-audit", "--no-fund");
}
npm("run", "build");

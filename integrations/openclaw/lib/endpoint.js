// Where the memdir service of this user (and MEMDIR_HOME) listens, and its token: read from
// $MEMDIR_HOME/service/service.json and $MEMDIR_HOME/service/token, the files `memdir daemon`
// keeps (memdir's docs/design.md, "The per-user service"). Only local files are read here.

import { readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

/** Thrown when there is no service to talk to; its message says what to do. */
export class ServiceUnavailable extends Error {}

/** $MEMDIR_HOME as memdir resolves it (the plugin's `home` setting first). */
export function memdirHome(configured) {
  const given = configured || process.env.MEMDIR_HOME;
  if (!given) return join(homedir(), ".memdir");
  return resolve(given.startsWith("~") ? join(homedir(), given.slice(1)) : given);
}

/** {port, token} of the running service of `home`. */
export function findService(home) {
  const folder = join(home, "service");
  let state;
  try {
    state = JSON.parse(readFileSync(join(folder, "service.json"), "utf8"));
  } catch {
    throw new ServiceUnavailable(
      `the memdir service is not running for ${home}: start it with \`memdir daemon start\``,
    );
  }
  if (!Number.isInteger(state.port) || !alive(state.pid)) {
    throw new ServiceUnavailable(
      `the memdir service of ${home} has stopped: start it with \`memdir daemon start\``,
    );
  }
  const tokenPath = join(folder, "token");
  let token;
  try {
    const info = statSync(tokenPath);
    if (!info.isFile() || (info.mode & 0o077) !== 0) {
      throw new ServiceUnavailable(`${tokenPath} must be a file only its owner can read`);
    }
    token = readFileSync(tokenPath, "utf8").trim();
  } catch (err) {
    if (err instanceof ServiceUnavailable) throw err;
    throw new ServiceUnavailable(`cannot read the memdir service's token ${tokenPath}`);
  }
  return { port: state.port, token };
}

function alive(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === "EPERM";
  }
}

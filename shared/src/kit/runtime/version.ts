// The version a process reports (logs, metrics, the agent's heartbeat, the dashboard):
// MIRRORHUB_VERSION when the image sets it, else the `version` of the package.json at
// `packageJson` (a URL relative to the entry module: hub, agent and standalone each have theirs).
import { fs } from './builtins.js';

const { readFileSync } = fs;

export function processVersion(
  packageJson: URL,
  env: Record<string, string | undefined> = process.env,
): string {
  const fromEnv = env['MIRRORHUB_VERSION'];
  if (fromEnv) return fromEnv;
  try {
    const pkg = JSON.parse(readFileSync(packageJson, 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

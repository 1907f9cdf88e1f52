// helm as a user runs it: the binary the kit builds from Go modules, with its cache, config and
// data under a temp dir so nothing of the machine's own helm setup leaks in or out.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { ensureHelm } from '@mirrorhub/infra/components/index';

const run = promisify(execFile);

export interface Helm {
  /** Runs helm; resolves with stdout, rejects with helm's stderr in the error. */
  (args: string[]): Promise<string>;
  /** helm's stderr when the command fails; throws when it succeeds. */
  fails(args: string[]): Promise<string>;
  /** Removes the temp home. */
  cleanup(): Promise<void>;
}

export async function isolatedHelm(): Promise<Helm> {
  const bin = await ensureHelm();
  const home = await mkdtemp(join(tmpdir(), 'mirrorhub-helm-'));
  const helm = (async (args: string[]) => {
    const { stdout } = await run(bin, args, {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: home,
        HELM_CACHE_HOME: join(home, 'cache'),
        HELM_CONFIG_HOME: join(home, 'config'),
        HELM_DATA_HOME: join(home, 'data'),
      },
      maxBuffer: 32 * 1024 * 1024,
    });
    return stdout;
  }) as Helm;
  helm.fails = async (args) => {
    try {
      await helm(args);
    } catch (err) {
      return String((err as { stderr?: string }).stderr ?? err);
    }
    throw new Error(`helm ${args.join(' ')} succeeded, expected it to fail`);
  };
  helm.cleanup = () => rm(home, { recursive: true, force: true });
  return helm;
}

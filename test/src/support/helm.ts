// helm as a user runs it: the binary the kit builds from Go modules, with its cache, config and
// data under a temp dir so nothing of the machine's own helm setup leaks in or out.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import {
  KubernetesObjectApi,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { parseAllDocuments, stringify } from 'yaml';

import { ensureHelm } from '@mirrorhub/infra/components/index';

import { chartsDir } from './crds.js';

const run = promisify(execFile);

export interface Helm {
  /** Runs helm; resolves with stdout, rejects with helm's stderr in the error. */
  (args: string[]): Promise<string>;
  /** helm's stderr when the command fails; throws when it succeeds. */
  fails(args: string[]): Promise<string>;
  /** Removes the temp home. */
  cleanup(): Promise<void>;
  /** The binary, and the environment it runs with (its isolated home), for scripts that run it. */
  bin: string;
  env: Record<string, string>;
}

export async function isolatedHelm(): Promise<Helm> {
  const bin = await ensureHelm();
  const home = await mkdtemp(join(tmpdir(), 'mirrorhub-helm-'));
  const env = {
    HOME: home,
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_DATA_HOME: join(home, 'data'),
  };
  const helm = (async (args: string[]) => {
    const { stdout } = await run(bin, args, {
      env: { PATH: process.env.PATH ?? '', ...env },
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
  helm.bin = bin;
  helm.env = env;
  return helm;
}

/**
 * What a chart installs that decides who may do what: its ServiceAccounts, RBAC and admission
 * policies. The demo applies these (and not the Deployments: it runs hub and agents as local
 * processes, with tokens of those ServiceAccounts).
 */
export const IDENTITY_KINDS: readonly string[] = [
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
];

/** `helm template <release> charts/<chart> -n <namespace> -f <values>`, as objects. */
export async function renderChart(
  chart: 'mirrorhub-hub' | 'mirrorhub-agent',
  release: string,
  namespace: string,
  values: object,
): Promise<KubernetesObject[]> {
  const helm = await isolatedHelm();
  try {
    const file = join(await mkdtemp(join(tmpdir(), 'mirrorhub-values-')), 'values.yaml');
    await writeFile(file, stringify(values), { mode: 0o600 });
    try {
      const out = await helm([
        'template',
        release,
        join(chartsDir, chart),
        '--namespace',
        namespace,
        '-f',
        file,
      ]);
      return parseAllDocuments(out)
        .map((d) => d.toJS() as KubernetesObject | null)
        .filter((o): o is KubernetesObject => o !== null);
    } finally {
      await rm(join(file, '..'), { recursive: true, force: true });
    }
  } finally {
    await helm.cleanup();
  }
}

/**
 * Creates the rendered objects of `kinds` as `helm install` would (a namespaced object the
 * template leaves without a namespace goes to the release's), in the order rendered.
 */
export async function applyRendered(
  kc: KubeConfig,
  objs: readonly KubernetesObject[],
  namespace: string,
  kinds: readonly string[] = IDENTITY_KINDS,
): Promise<KubernetesObject[]> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const picked = objs.filter((o) => kinds.includes(o.kind ?? ''));
  for (const o of picked) {
    const namespaced = ['ServiceAccount', 'Role', 'RoleBinding'].includes(o.kind!);
    const metadata = namespaced ? { namespace, ...o.metadata } : o.metadata;
    await api.create({ ...o, metadata });
  }
  return picked;
}

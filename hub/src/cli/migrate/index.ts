// `mirrorhub migrate`: reads what kubernetes-reflector, kubed/config-syncer, ClusterSecret and
// KTS mirrors are configured to do in a cluster and writes the equivalent mirrorhub objects.
//   gather (I/O: the user's kubeconfig, lists only) -> convert (pure: each tool's module, one
//   Translation) -> YAML on stdout or one file per object, or --plan (plan.ts) -> exit code.
// Nothing in the cluster is written. Secrets and ConfigMaps are listed as metadata only.
import { fs } from '@mirrorhub/shared/kit/runtime/builtins';
import { join } from 'node:path';
import { groupPath, corePath, isNotFound, RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { errorMessage, httpStatusOf } from '@mirrorhub/shared/kit/runtime/errors';
import { CliError, describeApiFailure, loadKube } from '../gather.js';
import { translateClusterSecrets } from './clustersecret.js';
import { translateKts } from './kts.js';
import { translateKubed } from './kubed.js';
import {
  emptyTranslation,
  type ClusterSecret,
  type Inventory,
  type KtsMirror,
  type Listed,
  type Options,
  type Tool,
  type Translation,
} from './model.js';
import { planRules, renderPlan, selectionLines } from './plan.js';
import { translateReflector } from './reflector.js';
import { fileName, toYaml, toYamlStream } from './render.js';

export type { Inventory, Options, Translation } from './model.js';

/** The pure converter: every tool's objects in, mirrorhub objects, rules, refusals and notes out. */
export function convert(inv: Inventory, opts: Options): Translation {
  const out = emptyTranslation();
  translateReflector(inv, opts, out);
  translateKubed(inv, opts, out);
  translateClusterSecrets(inv, opts, out);
  translateKts(inv, opts, out);
  const tools = new Set(out.rules.map((r) => r.tool));
  for (const [tool, note] of TOOL_NOTES) if (tools.has(tool)) out.notes.push(note);
  return withoutDuplicates(out);
}

/** What changes on purpose, once per tool that had a rule. */
const TOOL_NOTES: [Tool, string][] = [
  [
    'reflector',
    "reflector: mirrorhub keeps the copies when the source is deleted or loses its annotations (reflector deleted them); deleting the SecretMirror (deletePolicy Delete) removes them. mirrorhub also copies the source's labels and annotations (reflector copied data and type only)",
  ],
  [
    'kubed',
    "kubed: mirrorhub keeps the copies when the source is deleted or loses its sync annotation (kubed deleted them); deleting the SecretMirror (deletePolicy Delete) removes them. kubed overwrote any object of the copy's name; mirrorhub leaves an unmarked one alone and reports a Conflict",
  ],
  [
    'ClusterSecret',
    "ClusterSecret: deleting the ClusterSecretMirror removes the copies, as deleting the ClusterSecret did. With valueFrom, mirrorhub also copies the referenced Secret's labels and annotations (ClusterSecret copied its own)",
  ],
  [
    'KTS',
    'KTS: namespace patterns were unanchored substring matches; mirrorhub anchors them, so each was rewritten as .*(?:pattern).* to select the same namespaces',
  ],
];

/**
 * Two rules that became the same object (one source annotated for both reflector and kubed, a
 * KTS mirror named like a reflector source): the first stays, the second is refused, since
 * applying both would silently keep only one.
 */
function withoutDuplicates(t: Translation): Translation {
  const key = (o: Record<string, unknown>) => {
    const m = (o['metadata'] ?? {}) as { name?: string; namespace?: string };
    return `${String(o['kind'])} ${m.namespace ? `${m.namespace}/` : ''}${m.name}`;
  };
  const firstRule = new Map<string, (typeof t.rules)[number]>();
  const rules = t.rules.filter((r) => {
    const first = firstRule.get(r.mirror);
    if (!first) {
      firstRule.set(r.mirror, r);
      return true;
    }
    t.refusals.push({
      tool: r.tool,
      object: r.object,
      reason: `it would become ${r.mirror}, which ${first.object} (${first.tool}) already becomes: two rules copy into the same mirror; keep one of them (remove the other tool's annotations or object), then migrate again`,
    });
    return false;
  });
  const seen = new Set<string>();
  const objects = t.objects.filter((o) => {
    const k = key(o);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  return { ...t, rules, objects };
}

// ---- reading the cluster ----------------------------------------------------------------------

const ACCEPT_METADATA_LIST =
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;q=0.9';

interface List<T> {
  items?: T[];
  metadata?: { continue?: string };
}

async function listAll<T>(rest: RestClient, path: string, accept?: string): Promise<T[]> {
  const items: T[] = [];
  let token: string | undefined;
  do {
    const page: List<T> = await rest.get<List<T>>(path, {
      query: { limit: 500, ...(token ? { continue: token } : {}) },
      accept,
    });
    items.push(...(page.items ?? []));
    token = page.metadata?.continue || undefined;
  } while (token);
  return items;
}

/** A custom resource list, or none when its CRD (or that version of it) is not served. */
async function listIfServed<T>(rest: RestClient, path: string): Promise<T[] | undefined> {
  try {
    return await listAll<T>(rest, path);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export async function gatherInventory(rest: RestClient, server: string): Promise<Inventory> {
  let what = 'listing namespaces';
  try {
    const namespaces = (
      await listAll<Listed>(rest, corePath('namespaces'), ACCEPT_METADATA_LIST)
    ).map((n) => ({ name: n.metadata.name, labels: n.metadata.labels }));
    what = 'listing Secrets in all namespaces (metadata only)';
    const secrets = await listAll<Listed>(rest, corePath('secrets'), ACCEPT_METADATA_LIST);
    what = 'listing ConfigMaps in all namespaces (metadata only)';
    const configMaps = await listAll<Listed>(rest, corePath('configmaps'), ACCEPT_METADATA_LIST);
    what = 'listing ClusterSecrets (clustersecret.io/v1)';
    const clusterSecrets =
      (await listIfServed<ClusterSecret>(
        rest,
        groupPath('clustersecret.io', 'v1', 'clustersecrets'),
      )) ?? [];
    what = 'listing KTS SecretMirrors (mirrors.kts.studio/v1alpha2)';
    const v2 = await listIfServed<KtsMirror>(
      rest,
      groupPath('mirrors.kts.studio', 'v1alpha2', 'secretmirrors'),
    );
    // Every object is served in every served version, converted: v1alpha2 lists them all. Only a
    // CRD that still serves v1alpha1 alone is read in v1alpha1 (translated as KTS converts it).
    what = 'listing KTS SecretMirrors (mirrors.kts.studio/v1alpha1)';
    const ktsMirrors =
      v2 !== undefined
        ? v2.map((m) => ({ ...m, apiVersion: m.apiVersion ?? 'mirrors.kts.studio/v1alpha2' }))
        : (
            (await listIfServed<KtsMirror>(
              rest,
              groupPath('mirrors.kts.studio', 'v1alpha1', 'secretmirrors'),
            )) ?? []
          ).map((m) => ({ ...m, apiVersion: m.apiVersion ?? 'mirrors.kts.studio/v1alpha1' }));
    return { namespaces, secrets, configMaps, clusterSecrets, ktsMirrors };
  } catch (err) {
    if (httpStatusOf(err) === 403) {
      throw new CliError(
        `your identity may not do this (${what} on ${server}: ${errorMessage(err)}); migrate reads every namespace, Secret and ConfigMap metadata, ClusterSecret and KTS SecretMirror: run it as a cluster administrator (list on those resources)`,
        { cause: err },
      );
    }
    throw describeApiFailure(err, server, what);
  }
}

// ---- the command ------------------------------------------------------------------------------

export interface MigrateArgs {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  out?: string | undefined;
  plan: boolean;
  continueOnRefusal: boolean;
  sourceNamespace: string;
  agentNamespace: string;
  kubedContexts?: Options['kubedContexts'];
}

interface Io {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: Record<string, string | undefined>;
}

/** Runs migrate against a cluster; resolves to the exit code (errors are thrown as CliError). */
export async function runMigrate(args: MigrateArgs, io: Io): Promise<number> {
  const kube = await loadKube(args, io.env);
  const rest = new RestClient(kube.access, { timeoutMs: 15_000, userAgent: 'mirrorhub-cli' });
  let inv: Inventory;
  try {
    inv = await gatherInventory(rest, kube.server);
  } finally {
    rest.close();
  }
  return emitMigration(inv, args, io);
}

/** Prints (or writes) what convert() made of `inv`; the exit code. */
export function emitMigration(inv: Inventory, args: MigrateArgs, io: Io): number {
  const t = convert(inv, {
    agentNamespace: args.agentNamespace,
    sourceNamespace: args.sourceNamespace,
    kubedContexts: args.kubedContexts,
  });
  for (const r of t.refusals) {
    io.stderr.write(`cannot translate ${r.object} (${r.tool}): ${r.reason}\n`);
  }
  if (args.plan) {
    io.stdout.write(renderPlan(planRules(t.rules, inv)));
    for (const n of t.notes) io.stdout.write(`note: ${n}\n`);
  } else {
    for (const rule of t.rules) {
      if (rule.elsewhere) continue;
      io.stderr.write(`${rule.mirror} (from ${rule.object}):\n`);
      for (const l of selectionLines(rule)) io.stderr.write(`  ${l}\n`);
    }
    for (const n of t.notes) io.stderr.write(`note: ${n}\n`);
  }
  if (t.rules.length === 0 && t.refusals.length === 0) {
    io.stderr.write(
      'nothing to migrate: no reflector or kubed annotations, ClusterSecrets or KTS SecretMirrors found\n',
    );
  }
  if (t.refusals.length > 0 && !args.continueOnRefusal) {
    io.stderr.write(
      `error: ${t.refusals.length} rule(s) cannot be translated (listed above)${args.plan ? ', and the plan leaves them out' : '; nothing was written'}: fix them, or pass --continue to emit the rest\n`,
    );
    return 1;
  }
  if (args.plan) return 0;
  if (args.out) writeFiles(args.out, t.objects, io);
  else io.stdout.write(toYamlStream(t.objects));
  return 0;
}

/** One file per object in `dir`; refuses before writing anything if any file exists. */
function writeFiles(dir: string, objects: readonly Record<string, unknown>[], io: Io): void {
  const { existsSync, mkdirSync, writeFileSync } = fs;
  const files = objects.map((o) => ({ path: join(dir, fileName(o)), o }));
  const taken = files.filter((f) => existsSync(f.path)).map((f) => f.path);
  if (taken.length > 0) {
    throw new CliError(
      `--out ${dir}: ${taken.join(', ')} already exist${taken.length === 1 ? 's' : ''}; migrate never overwrites a file: pass an empty or new directory`,
    );
  }
  mkdirSync(dir, { recursive: true });
  for (const f of files) {
    writeFileSync(f.path, toYaml(f.o), { flag: 'wx', mode: 0o600 });
    io.stderr.write(`wrote ${f.path}\n`);
  }
}

// terraform and the hashicorp/aws provider, each built once from Go modules and cached outside
// the repo, and a filesystem mirror + CLI config through which terraform finds that provider
// without any network (terraform/, test/src/terraform.test.ts, docs/terraform.md).

import { createHash } from 'node:crypto';
import * as fs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { binaryDir, ensureBinary, runCapture, runLogged, which } from './cache.js';

export const TERRAFORM_VERSION = 'v1.11.4';

/**
 * The hashicorp/aws provider is a Go module whose path has no /vN suffix, so its v6 release tags
 * are not Go module versions: the Go proxy serves it only as a pseudo-version of a commit. This
 * is commit 5f2286d6d836 of 2026-06-02 on main, after the v6.47.0 release (its version/VERSION
 * file says 6.47.1; its CHANGELOG has an unreleased 6.48.0 section).
 */
export const AWS_PROVIDER_MODULE = 'github.com/hashicorp/terraform-provider-aws';
export const AWS_PROVIDER_MODULE_VERSION = 'v1.60.1-0.20260602190131-5f2286d6d836';
/** The version the mirror offers it as (and the binary reports): that of its version/VERSION. */
export const AWS_PROVIDER_VERSION = '6.47.1';
/** Terraform's source address of the provider. */
export const AWS_PROVIDER_SOURCE = 'registry.terraform.io/hashicorp/aws';

/** terraform v1.11.4's go.mod says go 1.23.3; the provider's says go 1.26.3. */
const TERRAFORM_MIN_GO = '1.24';
const PROVIDER_MIN_GO = '1.26.3';

const TERRAFORM_ENV = 'MIRRORHUB_TERRAFORM';
const PROVIDER_ENV = 'MIRRORHUB_TF_AWS_PROVIDER';
const PROVIDER_FULL_ENV = 'MIRRORHUB_TF_AWS_PROVIDER_FULL';

/**
 * terraform/tools: a go.mod that requires github.com/hashicorp/terraform v1.11.4 and replaces its
 * nested modules (backends, internal/legacy) with pseudo-versions of the same v1.11.4 commit.
 * Upstream's go.mod points those at local directories, which is why `go install ...@v1.11.4`
 * refuses it. Resolved from this file so it works from src/ and dist/ alike.
 */
export const terraformToolsDir = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../terraform/tools',
);

// ---------------------------------------------------------------------------------------------
// terraform

/**
 * Path of a terraform binary: `$MIRRORHUB_TERRAFORM`, else the cached build, else builds it from
 * terraform/tools (once; minutes with cold Go caches, see docs/terraform.md).
 */
export async function ensureTerraform(): Promise<string> {
  const key = await toolsKey();
  return ensureBinary({
    name: 'terraform',
    version: `${TERRAFORM_VERSION}-${key}`,
    envVar: TERRAFORM_ENV,
    logFile: `${binaryDir('terraform', `${TERRAFORM_VERSION}-${key}`)}.build.log`,
    message: `building terraform ${TERRAFORM_VERSION} from Go modules (once; see docs/terraform.md for how long)...`,
    build: (dest) =>
      buildTerraform(dest, `${binaryDir('terraform', `${TERRAFORM_VERSION}-${key}`)}.build.log`),
  });
}

/** Changes when terraform/tools' go.mod or go.sum change, so an upgrade rebuilds. */
async function toolsKey(): Promise<string> {
  const h = createHash('sha256');
  for (const f of ['go.mod', 'go.sum']) {
    const text = await fs.readFile(path.join(terraformToolsDir, f)).catch(() => {
      throw new Error(
        `${path.join(terraformToolsDir, f)} is missing: it pins the terraform build; restore it from git or set ${TERRAFORM_ENV} to a terraform binary`,
      );
    });
    h.update(f).update(text);
  }
  return h.digest('hex').slice(0, 8);
}

/** The linker flags of terraform's release builds (.github/scripts/get_product_version.sh). */
export function terraformLdflags(): string {
  return "-s -w -X 'github.com/hashicorp/terraform/version.dev=no'";
}

async function buildTerraform(destDir: string, logFile: string): Promise<void> {
  const go = requireGo(TERRAFORM_MIN_GO, TERRAFORM_ENV, 'terraform');
  await runLogged(
    go,
    [
      'build',
      '-trimpath',
      '-buildvcs=false',
      '-mod=readonly',
      `-ldflags=${terraformLdflags()}`,
      '-o',
      path.join(destDir, 'terraform'),
      'github.com/hashicorp/terraform',
    ],
    {
      logFile,
      cwd: terraformToolsDir,
      env: goEnv(),
      timeoutMs: 40 * 60_000,
      hint: `check access to the Go module proxy and Go >= ${TERRAFORM_MIN_GO}, or set ${TERRAFORM_ENV} to a terraform ${TERRAFORM_VERSION} binary`,
    },
  );
  const out = await runCapture(path.join(destDir, 'terraform'), ['version', '-json'], {
    timeoutMs: 30_000,
    env: { ...process.env, CHECKPOINT_DISABLE: '1' },
  });
  const got = (JSON.parse(out) as { terraform_version?: string }).terraform_version;
  if (`v${got}` !== TERRAFORM_VERSION) {
    throw new Error(
      `the terraform build reports version ${got}, expected ${TERRAFORM_VERSION.slice(1)}: check terraform/tools/go.mod`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// hashicorp/aws provider

/** Terraform's name of this machine's platform: linux_amd64, darwin_arm64, ... */
export function terraformPlatform(
  platform: NodeJS.Platform = process.platform,
  arch: string = process.arch,
): string {
  const os = platform === 'win32' ? 'windows' : platform;
  const goArch: Record<string, string> = { x64: 'amd64', arm64: 'arm64', ia32: '386', arm: 'arm' };
  return `${os}_${goArch[arch] ?? arch}`;
}

/** `registry.terraform.io/hashicorp/aws/<version>/<platform>/terraform-provider-aws_v<version>`. */
export function awsProviderMirrorPath(version = AWS_PROVIDER_VERSION): string {
  return path.join(
    AWS_PROVIDER_SOURCE,
    version,
    terraformPlatform(),
    `terraform-provider-aws_v${version}`,
  );
}

export interface AwsProviderMirror {
  /** The provider binary. */
  binary: string;
  /** A filesystem mirror (unpacked layout) that holds this provider and nothing else. */
  mirrorDir: string;
  version: string;
  /** `trimmed` (the default build), `full`, or `given` ($MIRRORHUB_TF_AWS_PROVIDER). */
  flavour: 'trimmed' | 'full' | 'given';
}

/**
 * The provider's service packages the default build registers: every resource and data source
 * terraform/ uses is in one of them (aws_iam_*, aws_eks_*, aws_caller_identity, aws_partition,
 * aws_region). The code is the provider's own, unchanged; only the generated lists that register
 * the other ~260 services (and their AWS SDK clients) are cut, see trimmedSources().
 */
export const AWS_PROVIDER_SERVICES: readonly string[] = ['eks', 'iam', 'meta', 'sts'];
/** AWS SDK clients kept: those of the services above, and S3's, which the provider core uses. */
export const AWS_PROVIDER_CLIENTS: readonly string[] = ['eks', 'iam', 's3', 'sts'];

/**
 * The hashicorp/aws provider in a filesystem mirror:
 * - `$MIRRORHUB_TF_AWS_PROVIDER`: a provider binary you have (e.g. a release from the registry),
 *   offered as AWS_PROVIDER_VERSION; nothing is built.
 * - default: built once into the cache from the pinned module, registering only
 *   AWS_PROVIDER_SERVICES. The complete provider is ~2,000 packages and takes far longer than a
 *   CI run may on 2 cores (docs/terraform.md has the figures); this build compiles the same
 *   provider framework, configuration, credential chain and resource code for the services
 *   terraform/ uses, in minutes.
 * - `$MIRRORHUB_TF_AWS_PROVIDER_FULL=1`: the complete provider, built once into the cache.
 */
export async function ensureAwsProvider(): Promise<AwsProviderMirror> {
  const fromEnv = process.env[PROVIDER_ENV];
  if (fromEnv) {
    const binary = path.resolve(fromEnv);
    await fs.access(binary, fs.constants.X_OK).catch(() => {
      throw new Error(
        `${PROVIDER_ENV}=${fromEnv} is not an executable file: point it at a terraform-provider-aws binary or unset it to build the provider into the cache`,
      );
    });
    // A mirror of its own in a temp dir, linking to the given binary.
    const mirrorDir = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-tf-mirror-'));
    const link = path.join(mirrorDir, awsProviderMirrorPath());
    await fs.mkdir(path.dirname(link), { recursive: true });
    await fs.symlink(binary, link);
    return { binary, mirrorDir, version: AWS_PROVIDER_VERSION, flavour: 'given' };
  }
  const flavour = process.env[PROVIDER_FULL_ENV] === '1' ? 'full' : 'trimmed';
  const version = `${AWS_PROVIDER_VERSION}-${AWS_PROVIDER_MODULE_VERSION.slice(-12)}-${flavour}`;
  const dir = binaryDir('terraform-provider-aws', version);
  const logFile = `${dir}.build.log`;
  const binary = await ensureBinary({
    name: 'terraform-provider-aws',
    version,
    file: path.join('mirror', awsProviderMirrorPath()),
    logFile,
    message:
      flavour === 'full'
        ? `building the complete hashicorp/aws provider ${AWS_PROVIDER_VERSION} from Go modules (once; this is very long: see docs/terraform.md)...`
        : `building the hashicorp/aws provider ${AWS_PROVIDER_VERSION} (services ${AWS_PROVIDER_SERVICES.join(', ')}) from Go modules (once; minutes, see docs/terraform.md)...`,
    build: (dest) => buildAwsProvider(dest, logFile, flavour),
  });
  return {
    binary,
    mirrorDir: path.join(dir, 'mirror'),
    version: AWS_PROVIDER_VERSION,
    flavour,
  };
}

export function awsProviderLdflags(): string {
  return `-s -w -X ${AWS_PROVIDER_MODULE}/version.ProviderVersion=${AWS_PROVIDER_VERSION}`;
}

async function buildAwsProvider(
  destDir: string,
  logFile: string,
  flavour: 'trimmed' | 'full',
): Promise<void> {
  const go = requireGo(PROVIDER_MIN_GO, PROVIDER_ENV, 'terraform-provider-aws');
  const hint = `check access to the Go module proxy and Go >= ${PROVIDER_MIN_GO}, or set ${PROVIDER_ENV} to a terraform-provider-aws binary`;
  const target = path.join(destDir, 'mirror', awsProviderMirrorPath());
  await fs.mkdir(path.dirname(target), { recursive: true });
  // The provider's own go.mod and go.sum, verified by the module cache like any dependency.
  const download = await runCapture(
    go,
    ['mod', 'download', '-json', `${AWS_PROVIDER_MODULE}@${AWS_PROVIDER_MODULE_VERSION}`],
    { cwd: destDir, env: goEnv(), timeoutMs: 30 * 60_000, hint },
  ).catch((err: Error) => {
    throw new Error(`downloading ${AWS_PROVIDER_MODULE}: ${err.message}`);
  });
  const moduleDir = (JSON.parse(download) as { Dir?: string }).Dir;
  if (!moduleDir) throw new Error(`go mod download gave no directory for ${AWS_PROVIDER_MODULE}`);

  let buildDir = moduleDir;
  if (flavour === 'trimmed') {
    // Go refuses overlays of files in the module cache, so the build runs in a copy of the
    // module (taken from the checksummed cache) without the ~250 MB of service packages it
    // will not compile, with the trimmed files written over the generated ones.
    buildDir = path.join(destDir, 'src');
    await fs.cp(moduleDir, buildDir, {
      recursive: true,
      filter: (src) => keepProviderSource(path.relative(moduleDir, src)),
    });
    await makeWritable(buildDir); // the module cache's files and folders are read-only
    for (const [rel, text] of Object.entries(await trimmedSources(moduleDir))) {
      const file = path.join(buildDir, rel);
      if (text === null) await fs.rm(file);
      else await fs.writeFile(file, text);
      await fs.appendFile(logFile, `trimmed: ${rel}${text === null ? ' (left out)' : ''}\n`);
    }
  }
  try {
    await runLogged(
      go,
      [
        'build',
        '-trimpath',
        '-buildvcs=false',
        '-mod=readonly',
        `-ldflags=${awsProviderLdflags()}`,
        '-o',
        target,
        '.',
      ],
      {
        logFile,
        cwd: buildDir,
        env: goEnv(),
        timeoutMs: (flavour === 'full' ? 180 : 40) * 60_000,
        hint,
      },
    );
  } finally {
    if (buildDir !== moduleDir) await fs.rm(buildDir, { recursive: true, force: true });
  }
}

/** What the trimmed build copies of the module: all but the code of unused services and docs. */
export function keepProviderSource(rel: string): boolean {
  const parts = rel.split(path.sep);
  if (
    parts.length === 1 &&
    ['website', '.archive', '.changelog', 'docs', 'examples'].includes(parts[0]!)
  ) {
    return false;
  }
  if (parts[0] === 'internal' && parts[1] === 'service' && parts[2] !== undefined) {
    if (AWS_PROVIDER_SERVICES.includes(parts[2])) return true;
    // internal/embed.go embeds service/*/smarterr.hcl (error-message configuration): keep
    // those, so the provider's error texts are the same as a complete build's.
    return parts.length === 3 || (parts.length === 4 && parts[3] === 'smarterr.hcl');
  }
  return true;
}

async function makeWritable(dir: string): Promise<void> {
  await fs.chmod(dir, 0o755);
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) await makeWritable(p);
    else await fs.chmod(p, 0o644);
  }
}

/**
 * The provider files the trimmed build replaces (path relative to the module -> new content, or
 * null for a file left out). Throws when the pinned sources do not have the expected shape, so a
 * version bump cannot silently build something else.
 */
export async function trimmedSources(moduleDir: string): Promise<Record<string, string | null>> {
  const read = (rel: string) => fs.readFile(path.join(moduleDir, rel), 'utf8');
  const packages = 'internal/provider/sdkv2/service_packages_gen.go';
  const clients = 'internal/conns/awsclient_gen.go';
  const meta = 'internal/service/meta/service_package_gen.go';
  return {
    [packages]: trimServicePackages(await read(packages), AWS_PROVIDER_SERVICES),
    [clients]: trimAwsClients(await read(clients), AWS_PROVIDER_CLIENTS),
    // aws_regions is the one meta data source that needs the (huge) ec2 service package.
    [meta]: dropRegionsDataSource(await read(meta)),
    'internal/service/meta/regions_data_source.go': null,
  };
}

const SERVICE_IMPORT =
  /^\s*"github\.com\/hashicorp\/terraform-provider-aws\/internal\/service\/(\w+)"$/;
const SERVICE_ENTRY = /^\s*(\w+)\.ServicePackage\(ctx\),$/;

/** internal/provider/sdkv2/service_packages_gen.go registering only `keep`. */
export function trimServicePackages(source: string, keep: readonly string[]): string {
  const seen = new Set<string>();
  const lines = source.split('\n').filter((line) => {
    const m = SERVICE_IMPORT.exec(line) ?? SERVICE_ENTRY.exec(line);
    if (!m) return true;
    if (!keep.includes(m[1]!)) return false;
    seen.add(m[1]!);
    return true;
  });
  const missing = keep.filter((k) => !seen.has(k));
  if (missing.length > 0) {
    throw new Error(
      `the provider's service package list has no ${missing.join(', ')}: AWS_PROVIDER_SERVICES does not fit ${AWS_PROVIDER_MODULE_VERSION}`,
    );
  }
  return lines.join('\n');
}

const SDK_IMPORT = /^\s*"github\.com\/aws\/aws-sdk-go-v2\/service\/(\w+)"$/;
const CLIENT_FUNC = /^func \(c \*AWSClient\) \w+\(ctx context\.Context\) \*(\w+)\.Client \{$/;

/** internal/conns/awsclient_gen.go with the client accessors of `keep` only. */
export function trimAwsClients(source: string, keep: readonly string[]): string {
  const out: string[] = [];
  const seen = new Set<string>();
  let skipping = false;
  for (const line of source.split('\n')) {
    if (skipping) {
      if (line === '}') skipping = false;
      continue;
    }
    const imp = SDK_IMPORT.exec(line);
    if (imp && !keep.includes(imp[1]!)) continue;
    const fn = CLIENT_FUNC.exec(line);
    if (fn) {
      if (!keep.includes(fn[1]!)) {
        skipping = true;
        // Also drop the blank line that separated it from the previous function.
        if (out[out.length - 1] === '') out.pop();
        continue;
      }
      seen.add(fn[1]!);
    }
    out.push(line);
  }
  const missing = keep.filter((k) => !seen.has(k));
  if (missing.length > 0) {
    throw new Error(
      `the provider's AWS client list has no ${missing.join(', ')}: AWS_PROVIDER_CLIENTS does not fit ${AWS_PROVIDER_MODULE_VERSION}`,
    );
  }
  return out.join('\n');
}

/** internal/service/meta/service_package_gen.go without the aws_regions data source. */
export function dropRegionsDataSource(source: string): string {
  const out = source.replace(/\n\t\t\{\n\t\t\tFactory: +newRegionsDataSource,\n[^}]*\n\t\t\},/, '');
  if (out === source) {
    throw new Error(
      `the provider's meta service package has no aws_regions entry: the trimmed build does not fit ${AWS_PROVIDER_MODULE_VERSION}`,
    );
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// CLI configuration

/**
 * The CLI config that makes terraform install hashicorp/aws from `mirrorDir` and nothing from
 * anywhere else: with a provider_installation block, terraform uses only the methods it lists,
 * and there is no `direct {}`.
 */
export function terraformCliConfig(mirrorDir: string): string {
  return [
    '# Written by mirrorhub (infra/src/components/terraform.ts): providers come only from the',
    '# local filesystem mirror below; terraform never contacts a registry.',
    'provider_installation {',
    '  filesystem_mirror {',
    `    path    = ${JSON.stringify(mirrorDir)}`,
    `    include = [${JSON.stringify(AWS_PROVIDER_SOURCE)}]`,
    '  }',
    '}',
    '',
    'disable_checkpoint = true',
    '',
  ].join('\n');
}

export async function writeTerraformCliConfig(file: string, mirrorDir: string): Promise<string> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, terraformCliConfig(mirrorDir));
  return file;
}

/** Environment for running terraform non-interactively with that CLI config. */
export function terraformEnv(
  cliConfigFile: string,
  base: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  return {
    ...base,
    TF_CLI_CONFIG_FILE: cliConfigFile,
    TF_IN_AUTOMATION: '1',
    TF_INPUT: '0',
    CHECKPOINT_DISABLE: '1',
  };
}

export interface TerraformSetup {
  terraform: string;
  provider: AwsProviderMirror;
  cliConfigFile: string;
  /** Environment for `terraform` with the CLI config (pass to spawn). */
  env: NodeJS.ProcessEnv;
}

/** terraform + the provider mirror + a CLI config written to `<dir>/terraform.rc`. */
export async function ensureTerraformSetup(dir: string): Promise<TerraformSetup> {
  // One at a time: two cold Go builds at once on 2 cores would only slow each other down.
  const terraform = await ensureTerraform();
  const provider = await ensureAwsProvider();
  const cliConfigFile = await writeTerraformCliConfig(
    path.join(dir, 'terraform.rc'),
    provider.mirrorDir,
  );
  return { terraform, provider, cliConfigFile, env: terraformEnv(cliConfigFile) };
}

// ---------------------------------------------------------------------------------------------

function requireGo(minGo: string, envVar: string, what: string): string {
  const go = which('go');
  if (!go) {
    throw new Error(
      `go not found on PATH: install Go >= ${minGo} (https://go.dev/dl) or set ${envVar} to a ${what} binary`,
    );
  }
  return go;
}

function goEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CGO_ENABLED: '0',
    GOFLAGS: '', // a stray -mod=vendor or -modfile would break the build
    GO111MODULE: 'on',
    GOWORK: 'off',
    // The provider needs Go 1.26.3; with an older local Go, let it fetch the toolchain it names.
    GOTOOLCHAIN: process.env.GOTOOLCHAIN ?? 'auto',
  };
}

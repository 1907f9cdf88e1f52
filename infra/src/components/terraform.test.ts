import * as fs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  AWS_PROVIDER_MODULE_VERSION,
  AWS_PROVIDER_VERSION,
  TERRAFORM_VERSION,
  AWS_PROVIDER_CLIENTS,
  AWS_PROVIDER_SERVICES,
  awsProviderMirrorPath,
  dropRegionsDataSource,
  ensureAwsProvider,
  ensureTerraform,
  ensureTerraformSetup,
  keepProviderSource,
  terraformCliConfig,
  terraformEnv,
  terraformPlatform,
  terraformToolsDir,
  trimAwsClients,
  trimServicePackages,
} from './terraform.js';

const savedEnv = { ...process.env };
let scratch: string;
beforeAll(async () => {
  scratch = await fs.mkdtemp(path.join(tmpdir(), 'mirrorhub-terraform-unit-'));
});
afterAll(async () => {
  await fs.rm(scratch, { recursive: true, force: true });
});
afterEach(() => {
  process.env = { ...savedEnv };
  vi.restoreAllMocks();
});

describe('pins', () => {
  it('pins terraform v1.11.4 and the aws provider commit', () => {
    expect(TERRAFORM_VERSION).toBe('v1.11.4');
    expect(AWS_PROVIDER_VERSION).toBe('6.47.1');
    expect(AWS_PROVIDER_MODULE_VERSION).toBe('v1.60.1-0.20260602190131-5f2286d6d836');
  });

  it('builds terraform from terraform/tools, which requires exactly that version', async () => {
    const gomod = await fs.readFile(path.join(terraformToolsDir, 'go.mod'), 'utf8');
    expect(gomod).toMatch(/^\s*github\.com\/hashicorp\/terraform v1\.11\.4\b/m);
    expect(gomod).toMatch(/^tool github\.com\/hashicorp\/terraform$/m);
    // Every nested module of the v1.11.4 commit, at that commit.
    const replaced = [...gomod.matchAll(/^replace (\S+) => \1 (\S+)$/gm)];
    expect(replaced.length).toBe(9);
    for (const [, , version] of replaced) {
      expect(version).toBe('v0.0.0-20250409131005-35645b8fca68');
    }
  });
});

describe('the provider mirror', () => {
  it('names platforms the way terraform does', () => {
    expect(terraformPlatform('linux', 'x64')).toBe('linux_amd64');
    expect(terraformPlatform('linux', 'arm64')).toBe('linux_arm64');
    expect(terraformPlatform('darwin', 'arm64')).toBe('darwin_arm64');
    expect(terraformPlatform('win32', 'x64')).toBe('windows_amd64');
  });

  it('lays the provider out as an unpacked filesystem mirror', () => {
    expect(awsProviderMirrorPath('6.47.1')).toBe(
      path.join(
        'registry.terraform.io/hashicorp/aws/6.47.1',
        terraformPlatform(),
        'terraform-provider-aws_v6.47.1',
      ),
    );
  });

  it('writes a CLI config that installs hashicorp/aws from the mirror and nothing from anywhere', () => {
    const rc = terraformCliConfig('/cache/mirror');
    expect(rc).toContain('filesystem_mirror {');
    expect(rc).toContain('path    = "/cache/mirror"');
    expect(rc).toContain('include = ["registry.terraform.io/hashicorp/aws"]');
    expect(rc).not.toContain('direct');
    expect(rc).toContain('disable_checkpoint = true');
  });

  it('sets the CLI config and non-interactive mode in the environment', () => {
    const env = terraformEnv('/x/terraform.rc', { PATH: '/bin' });
    expect(env).toEqual({
      PATH: '/bin',
      TF_CLI_CONFIG_FILE: '/x/terraform.rc',
      TF_IN_AUTOMATION: '1',
      TF_INPUT: '0',
      CHECKPOINT_DISABLE: '1',
    });
  });
});

describe('overrides and errors', () => {
  it('returns $MIRRORHUB_TERRAFORM without building anything', async () => {
    process.env.MIRRORHUB_CACHE = scratch;
    process.env.MIRRORHUB_TERRAFORM = '/bin/true';
    expect(await ensureTerraform()).toBe('/bin/true');
  });

  it('mirrors $MIRRORHUB_TF_AWS_PROVIDER without building anything', async () => {
    process.env.MIRRORHUB_CACHE = scratch;
    process.env.MIRRORHUB_TF_AWS_PROVIDER = '/bin/true';
    const mirror = await ensureAwsProvider();
    try {
      expect(mirror.binary).toBe('/bin/true');
      expect(mirror.version).toBe(AWS_PROVIDER_VERSION);
      expect(mirror.flavour).toBe('given');
      const entry = path.join(mirror.mirrorDir, awsProviderMirrorPath());
      expect(await fs.readlink(entry)).toBe('/bin/true');
    } finally {
      await fs.rm(mirror.mirrorDir, { recursive: true, force: true });
    }
  });

  it('says in one line what to do when the given provider is not executable', async () => {
    process.env.MIRRORHUB_TF_AWS_PROVIDER = path.join(scratch, 'nope');
    await expect(ensureAwsProvider()).rejects.toThrow(
      `MIRRORHUB_TF_AWS_PROVIDER=${path.join(scratch, 'nope')} is not an executable file: point it at a terraform-provider-aws binary or unset it to build the provider into the cache`,
    );
  });

  it('says in one line what to do when Go is missing', async () => {
    process.env.MIRRORHUB_CACHE = scratch;
    delete process.env.MIRRORHUB_TERRAFORM;
    delete process.env.MIRRORHUB_TF_AWS_PROVIDER;
    process.env.PATH = path.join(scratch, 'empty-path');
    vi.spyOn(process.stderr, 'write').mockReturnValue(true);
    await expect(ensureTerraform()).rejects.toThrow(
      /^go not found on PATH: install Go >= 1\.24 \(https:\/\/go\.dev\/dl\) or set MIRRORHUB_TERRAFORM to a terraform binary$/,
    );
    await expect(ensureAwsProvider()).rejects.toThrow(
      /^go not found on PATH: install Go >= 1\.26\.3 \(https:\/\/go\.dev\/dl\) or set MIRRORHUB_TF_AWS_PROVIDER to a terraform-provider-aws binary$/,
    );
  });

  it('puts it together: binaries, mirror, CLI config file and env', async () => {
    process.env.MIRRORHUB_TERRAFORM = '/bin/true';
    process.env.MIRRORHUB_TF_AWS_PROVIDER = '/bin/true';
    const setup = await ensureTerraformSetup(path.join(scratch, 'setup'));
    try {
      expect(setup.terraform).toBe('/bin/true');
      expect(setup.cliConfigFile).toBe(path.join(scratch, 'setup', 'terraform.rc'));
      expect(await fs.readFile(setup.cliConfigFile, 'utf8')).toBe(
        terraformCliConfig(setup.provider.mirrorDir),
      );
      expect(setup.env.TF_CLI_CONFIG_FILE).toBe(setup.cliConfigFile);
    } finally {
      await fs.rm(setup.provider.mirrorDir, { recursive: true, force: true });
    }
  });
});

// Shaped like the pinned provider's generated files, shortened.
const SERVICE_PACKAGES = `package sdkv2

import (
	"context"
	"slices"

	"github.com/hashicorp/terraform-provider-aws/internal/conns"
	"github.com/hashicorp/terraform-provider-aws/internal/service/accessanalyzer"
	"github.com/hashicorp/terraform-provider-aws/internal/service/ec2"
	"github.com/hashicorp/terraform-provider-aws/internal/service/eks"
	"github.com/hashicorp/terraform-provider-aws/internal/service/iam"
)

func servicePackages(ctx context.Context) []conns.ServicePackage {
	v := []conns.ServicePackage{
		accessanalyzer.ServicePackage(ctx),
		ec2.ServicePackage(ctx),
		eks.ServicePackage(ctx),
		iam.ServicePackage(ctx),
	}

	return slices.Clone(v)
}`;

const CLIENTS = `package conns

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/hashicorp/terraform-provider-aws/internal/errs"
	"github.com/hashicorp/terraform-provider-aws/names"
)

func (c *AWSClient) EC2Client(ctx context.Context) *ec2.Client {
	return errs.Must(client[*ec2.Client](ctx, c, names.EC2, make(map[string]any)))
}

func (c *AWSClient) IAMClient(ctx context.Context) *iam.Client {
	return errs.Must(client[*iam.Client](ctx, c, names.IAM, make(map[string]any)))
}

func (c *AWSClient) S3Client(ctx context.Context) *s3.Client {
	return errs.Must(client[*s3.Client](ctx, c, names.S3, make(map[string]any)))
}
`;

const META = `func (p *servicePackage) FrameworkDataSources(ctx context.Context) []*inttypes.ServicePackageFrameworkDataSource {
	return []*inttypes.ServicePackageFrameworkDataSource{
		{
			Factory:  newRegionDataSource,
			TypeName: "aws_region",
			Name:     "Region",
			Region:   inttypes.ResourceRegionNoPartitionValidation(),
		},
		{
			Factory:  newRegionsDataSource,
			TypeName: "aws_regions",
			Name:     "Regions",
			Region:   inttypes.ResourceRegionDisabled(),
		},
		{
			Factory:  newServiceDataSource,
			TypeName: "aws_service",
		},
	}
}`;

describe('the trimmed provider build', () => {
  it('registers the services terraform/ uses, and the SDK clients they and the core need', () => {
    expect(AWS_PROVIDER_SERVICES).toEqual(['eks', 'iam', 'meta', 'sts']);
    expect(AWS_PROVIDER_CLIENTS).toEqual(['eks', 'iam', 's3', 'sts']);
  });

  it('keeps only the listed service packages, imports and registrations alike', () => {
    const out = trimServicePackages(SERVICE_PACKAGES, ['eks', 'iam']);
    expect(out).toContain('internal/service/eks"');
    expect(out).toContain('\t\tiam.ServicePackage(ctx),');
    expect(out).not.toMatch(/ec2|accessanalyzer/);
    expect(out).toContain('internal/conns"');
    expect(out).toContain('return slices.Clone(v)');
  });

  it('refuses to build when a listed service is not in the sources', () => {
    expect(() => trimServicePackages(SERVICE_PACKAGES, ['iam', 'sts'])).toThrow(
      /service package list has no sts/,
    );
  });

  it('keeps only the listed AWS SDK clients', () => {
    const out = trimAwsClients(CLIENTS, ['iam', 's3']);
    expect(out).not.toMatch(/ec2/i);
    expect(out).toContain('func (c *AWSClient) IAMClient(ctx context.Context) *iam.Client {');
    expect(out).toContain('func (c *AWSClient) S3Client(ctx context.Context) *s3.Client {');
    expect(out).toContain('"github.com/aws/aws-sdk-go-v2/service/s3"');
    expect(out).toContain('internal/errs"');
    expect(() => trimAwsClients(CLIENTS, ['eks'])).toThrow(/AWS client list has no eks/);
  });

  it('copies the module without the services it does not compile, and without the docs', () => {
    const keep = (rel: string) => keepProviderSource(rel.split('/').join(path.sep));
    expect(keep('')).toBe(true);
    expect(keep('go.mod')).toBe(true);
    expect(keep('internal/conns/awsclient_gen.go')).toBe(true);
    expect(keep('internal/service')).toBe(true);
    expect(keep('internal/service/iam')).toBe(true);
    expect(keep('internal/service/eks/access_entry.go')).toBe(true);
    expect(keep('internal/service/s3/bucket.go')).toBe(false);
    // internal/embed.go embeds every service's smarterr.hcl.
    expect(keep('internal/service/cloudtrail')).toBe(true);
    expect(keep('internal/service/cloudtrail/smarterr.hcl')).toBe(true);
    expect(keep('internal/service/cloudtrail/trail.go')).toBe(false);
    expect(keep('internal/service/cloudtrail/testdata')).toBe(false);
    expect(keep('website')).toBe(false);
    expect(keep('names/data')).toBe(true);
  });

  it('drops the aws_regions data source and nothing else', () => {
    const out = dropRegionsDataSource(META);
    expect(out).not.toContain('aws_regions');
    expect(out).toContain('TypeName: "aws_region",');
    expect(out).toContain('TypeName: "aws_service",');
    expect(() => dropRegionsDataSource(out)).toThrow(/no aws_regions entry/);
  });
});

// Which STS and EKS endpoint the hub calls for a follower's region.
//
// Why per region: a hub whose followers sit in several regions, each reached through that
// region's interface VPC endpoints (com.amazonaws.<region>.sts, com.amazonaws.<region>.eks),
// needs one endpoint per region; a single global override would send eu-west-1's calls to
// us-east-1's endpoint. Resolution, most specific first:
//
//   MIRRORHUB_STS_ENDPOINT_<REGION>   (REGION upper-cased, `-` as `_`: EU_WEST_1)
//   MIRRORHUB_STS_ENDPOINT            (every region: an emulator, or a hub with one region)
//   the SDK's own regional endpoint   (https://sts.<region>.amazonaws.com)
//
// and the same for EKS with MIRRORHUB_EKS_ENDPOINT[_<REGION>]. Nothing here loads the AWS SDK:
// config.ts reads the environment with it at start-up.

export type AwsService = 'sts' | 'eks';

/** Endpoint overrides: one for every region and/or one per region. */
export interface AwsEndpointOverrides {
  /** Every region's endpoint unless `byRegion` names the region. */
  global?: string;
  /** By region name (`eu-west-1`). */
  byRegion?: Readonly<Record<string, string>>;
}

/** The endpoint for `region`, or undefined for the SDK's default. */
export function endpointFor(
  overrides: AwsEndpointOverrides | undefined,
  region: string,
): string | undefined {
  return overrides?.byRegion?.[region] ?? overrides?.global;
}

const REGION = /^[a-z]{2}(-[a-z]+)+-\d+$/;

/** `eu-west-1` -> `EU_WEST_1`, the suffix of its environment variables. */
export function regionEnvSuffix(region: string): string {
  return region.toUpperCase().replace(/-/g, '_');
}

/**
 * MIRRORHUB_<SERVICE>_ENDPOINT and every MIRRORHUB_<SERVICE>_ENDPOINT_<REGION> in `env`. Throws
 * with the variable's name when a value is not an http(s) URL or the suffix is not a region.
 */
export function endpointOverridesFromEnv(
  env: Record<string, string | undefined>,
  service: AwsService,
): AwsEndpointOverrides | undefined {
  const base = `MIRRORHUB_${service.toUpperCase()}_ENDPOINT`;
  const out: AwsEndpointOverrides = {};
  const byRegion: Record<string, string> = {};
  for (const [name, raw] of Object.entries(env)) {
    if (name !== base && !name.startsWith(`${base}_`)) continue;
    const value = raw?.trim();
    if (!value) continue;
    if (!/^https?:\/\/[^\s/]+/.test(value)) {
      throw new Error(`${name} must be an http(s) URL; got "${value}"`);
    }
    if (name === base) {
      out.global = value;
      continue;
    }
    const region = name
      .slice(base.length + 1)
      .toLowerCase()
      .replace(/_/g, '-');
    if (!REGION.test(region)) {
      throw new Error(
        `${name}: "${name.slice(base.length + 1)}" is not a region (write it as ${base}_EU_WEST_1 for eu-west-1)`,
      );
    }
    byRegion[region] = value;
  }
  if (Object.keys(byRegion).length > 0) out.byRegion = byRegion;
  return out.global || out.byRegion ? out : undefined;
}

import { describe, expect, it } from 'vitest';
import { endpointFor, endpointOverridesFromEnv, regionEnvSuffix } from './endpoints.js';

describe('per-region AWS endpoints', () => {
  const env = {
    MIRRORHUB_STS_ENDPOINT: 'https://sts.global.example',
    MIRRORHUB_STS_ENDPOINT_EU_WEST_1: 'https://vpce-0a1.sts.eu-west-1.vpce.amazonaws.com',
    MIRRORHUB_STS_ENDPOINT_US_EAST_1: 'https://vpce-0b2.sts.us-east-1.vpce.amazonaws.com',
    MIRRORHUB_EKS_ENDPOINT_EU_WEST_1: 'https://vpce-0c3.eks.eu-west-1.vpce.amazonaws.com',
    MIRRORHUB_EKS_ENDPOINT_US_GOV_WEST_1: 'https://eks.gov.example',
    MIRRORHUB_STS_REGION: 'eu-west-1',
  };
  const sts = endpointOverridesFromEnv(env, 'sts');
  const eks = endpointOverridesFromEnv(env, 'eks');

  it.each<[string, 'sts' | 'eks', string | undefined]>([
    ['eu-west-1', 'sts', 'https://vpce-0a1.sts.eu-west-1.vpce.amazonaws.com'],
    ['us-east-1', 'sts', 'https://vpce-0b2.sts.us-east-1.vpce.amazonaws.com'],
    // a region without its own endpoint takes the global one
    ['ap-south-1', 'sts', 'https://sts.global.example'],
    ['eu-west-1', 'eks', 'https://vpce-0c3.eks.eu-west-1.vpce.amazonaws.com'],
    ['us-gov-west-1', 'eks', 'https://eks.gov.example'],
    // no global EKS override: the SDK's regional endpoint
    ['us-east-1', 'eks', undefined],
  ])('%s %s -> %s', (region, service, expected) => {
    expect(endpointFor(service === 'sts' ? sts : eks, region)).toBe(expected);
  });

  it('keeps the single global override working alone', () => {
    const only = endpointOverridesFromEnv(
      { MIRRORHUB_EKS_ENDPOINT: 'http://127.0.0.1:4566' },
      'eks',
    );
    expect(only).toEqual({ global: 'http://127.0.0.1:4566' });
    expect(endpointFor(only, 'eu-central-1')).toBe('http://127.0.0.1:4566');
    expect(endpointOverridesFromEnv({}, 'sts')).toBeUndefined();
    expect(endpointFor(undefined, 'eu-west-1')).toBeUndefined();
  });

  it('names the variable that is wrong', () => {
    expect(() =>
      endpointOverridesFromEnv({ MIRRORHUB_STS_ENDPOINT_EU_WEST_1: 'vpce-0a1.example' }, 'sts'),
    ).toThrow(/MIRRORHUB_STS_ENDPOINT_EU_WEST_1 must be an http\(s\) URL/);
    expect(() =>
      endpointOverridesFromEnv({ MIRRORHUB_STS_ENDPOINT_IRELAND: 'https://x.example' }, 'sts'),
    ).toThrow(/MIRRORHUB_STS_ENDPOINT_IRELAND: "IRELAND" is not a region/);
  });

  it('spells a region as its variable suffix', () => {
    expect(regionEnvSuffix('eu-west-1')).toBe('EU_WEST_1');
    expect(regionEnvSuffix('us-gov-west-1')).toBe('US_GOV_WEST_1');
  });
});

import { describe, expect, it } from 'vitest';
import {
  EksTokenSource,
  kubeAccessForCluster,
  type AwsCredentials,
} from '@mirrorhub/hub/clusters/aws/eks-token';
import { bearerOf, kubeConfigForCluster } from './eks-kubeconfig.js';

const CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

describe('kubeConfigForCluster', () => {
  it('puts a fresh bearer token on every request and keeps no secret in the config', async () => {
    let n = 0;
    const kc = kubeConfigForCluster({
      name: 'prod-eu-1',
      server: 'https://127.0.0.1:6443',
      caPem: CA,
      token: async () => `tok-${++n}`,
    });
    const a: { headers?: Record<string, string> } = {};
    const b: { headers?: Record<string, string> } = {};
    await kc.applyToHTTPSOptions(a as never);
    await kc.applyToHTTPSOptions(b as never);
    expect(a.headers?.Authorization).toBe('Bearer tok-1');
    expect(b.headers?.Authorization).toBe('Bearer tok-2');
    expect(kc.getCurrentCluster()?.server).toBe('https://127.0.0.1:6443');
    expect(Buffer.from(kc.getCurrentCluster()!.caData!, 'base64').toString()).toBe(CA);
    expect(kc.exportConfig()).not.toContain('tok-');
  });

  it('takes tokens from an EksTokenSource', async () => {
    const creds: AwsCredentials = {
      accessKeyId: 'AKIDEXAMPLE',
      secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
    };
    const T0 = new Date('2024-01-02T03:04:05Z');
    const s = new EksTokenSource({
      clusterName: 'prod-eu-1',
      region: 'eu-west-1',
      credentials: creds,
      now: () => T0,
    });
    const kc = kubeConfigForCluster({
      name: 'prod-eu-1',
      server: 'https://h',
      caPem: 'x',
      token: s,
    });
    const o: { headers?: Record<string, string> } = {};
    await kc.applyToHTTPSOptions(o as never);
    expect(o.headers?.Authorization).toBe(`Bearer ${(await s.getToken()).token}`);
  });
});

describe('bearerOf', () => {
  it('answers the token a KubeAccess sends, fresh each time', async () => {
    let n = 0;
    const access = kubeAccessForCluster({
      name: 'c',
      server: 'https://h',
      caPem: CA,
      token: async () => `tok-${++n}`,
    });
    expect(await bearerOf(access)).toBe('tok-1');
    expect(await bearerOf(access)).toBe('tok-2');
  });

  it('refuses an access that sends no bearer token', async () => {
    const access = {
      getCurrentCluster: () => ({ server: 'https://h' }),
      applyToHTTPSOptions: async () => {},
    };
    await expect(bearerOf(access)).rejects.toThrow(/no bearer token/);
  });
});

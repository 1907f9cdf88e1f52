import type https from 'node:https';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { describe, expect, it } from 'vitest';
import { parseKubeconfig } from './kubeconfig.js';

const WHERE = 'Secret ops/follower (key "kubeconfig")';

function kubeconfig(user: string, cluster = 'certificate-authority-data: Q0EK'): string {
  return `apiVersion: v1
kind: Config
current-context: f
contexts:
  - name: f
    context: { cluster: f, user: hub }
clusters:
  - name: f
    cluster:
      server: https://10.0.0.1:6443
      ${cluster}
users:
  - name: hub
    user:
      ${user}
`;
}

describe('parseKubeconfig', () => {
  it('loads inline credentials, current context only', async () => {
    const r = parseKubeconfig(kubeconfig('token: abc.def'), WHERE);
    expect(r.ok).toBe(true);
    const kc = (r as { kubeConfig: KubeAccess }).kubeConfig;
    expect(kc.getCurrentCluster()?.server).toBe('https://10.0.0.1:6443');
    const opts: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(opts);
    expect(opts.headers).toMatchObject({ Authorization: 'Bearer abc.def' });
  });

  it.each<[string, string, RegExp]>([
    [
      'an exec plugin',
      kubeconfig('exec: { command: /bin/sh, apiVersion: client.authentication.k8s.io/v1 }'),
      /exec credential plugin; the hub runs no programs/,
    ],
    ['an auth-provider', kubeconfig('auth-provider: { name: oidc }'), /auth-provider/],
    [
      'a token file',
      kubeconfig('tokenFile: /var/run/secrets/token'),
      /refers to a file \(tokenFile\)/,
    ],
    [
      'a client certificate path',
      kubeconfig('client-certificate: /etc/cert.pem'),
      /refers to a file \(client-certificate\)/,
    ],
    [
      'a CA path',
      kubeconfig('token: t', 'certificate-authority: /etc/ca.pem'),
      /cluster "f" refers to a file \(certificate-authority\)/,
    ],
    [
      'no current context',
      'apiVersion: v1\nkind: Config\ncontexts: []\n',
      /has no current-context/,
    ],
    ['not YAML', 'a: [b', /is not YAML/],
    [
      'a missing user',
      kubeconfig('token: t').replace('user: hub }', 'user: nobody }'),
      /names user "nobody"/,
    ],
  ])('refuses %s, saying so', (_, text, error) => {
    const r = parseKubeconfig(text, WHERE);
    expect(r.ok).toBe(false);
    const message = (r as { error: string }).error;
    expect(message).toMatch(error);
    expect(message).toContain('Secret ops/follower');
  });

  it('never echoes credentials in its errors', () => {
    const r = parseKubeconfig(kubeconfig('token: s3cr3t-token\n      exec: { command: x }'), WHERE);
    expect((r as { error: string }).error).not.toContain('s3cr3t');
  });
});

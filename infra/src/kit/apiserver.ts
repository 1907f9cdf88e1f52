import { writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';

import type { ServiceProcess } from '../components/cache.js';
import type { ClusterPki } from './pki.js';
import { startServer } from './process.js';

export interface ApiServerOptions {
  bin: string;
  name: string;
  dir: string;
  port: number;
  etcdUrl: string;
  pki: ClusterPki;
  /** TokenReview webhook (the EKS authenticator) for bearer tokens the server does not know. */
  webhookUrl?: string;
  /** Extra flags, e.g. shortened timeouts in tests. */
  extraArgs?: string[];
}

export interface ApiServer {
  server: string;
  proc: ServiceProcess;
}

/** The `iss` of the cluster's ServiceAccount tokens (what an IAM OIDC provider names for IRSA). */
export function serviceAccountIssuer(cluster: string): string {
  return `https://${cluster}.kit.mirrorhub.local`;
}

export async function startApiServer(o: ApiServerOptions): Promise<ApiServer> {
  const args = [
    `--etcd-servers=${o.etcdUrl}`,
    `--etcd-prefix=/registry-${o.name}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${o.port}`,
    `--cert-dir=${join(o.dir, 'certs')}`,
    `--tls-cert-file=${o.pki.servingCert}`,
    `--tls-private-key-file=${o.pki.servingKey}`,
    `--client-ca-file=${o.pki.caCert}`,
    `--service-account-issuer=${serviceAccountIssuer(o.name)}`,
    `--service-account-key-file=${o.pki.saPub}`,
    `--service-account-signing-key-file=${o.pki.saKey}`,
    `--api-audiences=https://${o.name}.kit.mirrorhub.local`,
    '--service-cluster-ip-range=10.96.0.0/16',
    '--authorization-mode=RBAC',
    '--allow-privileged=true',
    // MIRRORHUB_KIT_PROFILING=1: Go's pprof at /debug/pprof (e.g. `kubectl get --raw
    // '/debug/pprof/profile?seconds=10' > cpu.pprof`, then `go tool pprof -top cpu.pprof`): how
    // the API server's cost per copy was split in docs/BENCHMARKS.md.
    `--profiling=${process.env.MIRRORHUB_KIT_PROFILING === '1'}`,
    // Nothing else in the kit serves the kubernetes Service endpoints; skip the reconciler.
    '--endpoint-reconciler-type=none',
    '--enable-priority-and-fairness=false',
    '--v=0',
  ];
  if (o.webhookUrl) {
    const cfg = join(o.dir, 'authn-webhook.kubeconfig');
    await writeFile(
      cfg,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: eks-authenticator',
        `  cluster: {server: "${o.webhookUrl}"}`,
        'users:',
        '- name: kube-apiserver',
        '  user: {}',
        'contexts:',
        '- name: webhook',
        '  context: {cluster: eks-authenticator, user: kube-apiserver}',
        'current-context: webhook',
        '',
      ].join('\n'),
    );
    args.push(
      `--authentication-token-webhook-config-file=${cfg}`,
      '--authentication-token-webhook-version=v1',
      // Short, so an expired or revoked identity is noticed quickly in tests.
      '--authentication-token-webhook-cache-ttl=10s',
    );
  }
  args.push(...(o.extraArgs ?? []));
  const server = `https://127.0.0.1:${o.port}`;
  const tls = {
    ca: o.pki.caPem,
    cert: readFileSync(o.pki.adminCert),
    key: readFileSync(o.pki.adminKey),
  };
  const proc = await startServer(
    `kube-apiserver ${o.name} (/readyz on ${server})`,
    o.bin,
    args,
    join(o.dir, 'kube-apiserver.log'),
    () => getOk(`${server}/readyz`, tls),
    90_000,
  );
  return { server, proc };
}

function getOk(url: string, tls: { ca: string; cert: Buffer; key: Buffer }): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(url, { ...tls, timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.once('error', () => resolve(false));
    req.once('timeout', () => req.destroy());
    req.end();
  });
}

import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { KitError } from './errors.js';

const run = promisify(execFile);

/** Paths of the key material for one local cluster; every file lives in its own directory. */
export interface ClusterPki {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  adminCert: string;
  adminKey: string;
  saKey: string;
  saPub: string;
  caPem: string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  try {
    await run('openssl', args, { cwd });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') {
      throw new KitError('openssl not found on PATH: install it (apt-get install openssl)', {
        cause: err,
      });
    }
    throw new KitError(
      `openssl ${args[0]} failed: ${
        String(e.stderr ?? e.message)
          .trim()
          .split('\n')[0]
      }`,
      {
        cause: err,
      },
    );
  }
}

/**
 * A CA of its own per cluster (like EKS: the CA that DescribeCluster returns), a serving
 * certificate for 127.0.0.1/localhost, an admin client certificate in system:masters for the
 * kit's own kubeconfig, and an EC key pair that signs service-account tokens.
 */
export async function makeClusterPki(dir: string, cluster: string): Promise<ClusterPki> {
  await mkdir(dir, { recursive: true });
  const key = (name: string) =>
    openssl(
      ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', name],
      dir,
    );
  await Promise.all([key('ca.key'), key('serving.key'), key('admin.key'), key('sa.key')]);
  await openssl(
    [
      'req',
      '-x509',
      '-new',
      '-key',
      'ca.key',
      '-subj',
      `/CN=mirrorhub-kit-${cluster}-ca`,
      '-days',
      '3650',
      '-out',
      'ca.crt',
    ],
    dir,
  );
  await writeFile(
    join(dir, 'serving.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n',
  );
  await writeFile(
    join(dir, 'admin.ext'),
    'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n',
  );
  const sign = async (name: string, subj: string) => {
    await openssl(
      ['req', '-new', '-key', `${name}.key`, '-subj', subj, '-out', `${name}.csr`],
      dir,
    );
    await openssl(
      [
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-days',
        '825',
        '-extfile',
        `${name}.ext`,
        '-out',
        `${name}.crt`,
      ],
      dir,
    );
  };
  await sign('serving', '/CN=kube-apiserver');
  await sign('admin', '/O=system:masters/CN=mirrorhub-kit-admin');
  await openssl(['pkey', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
  return {
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    servingCert: join(dir, 'serving.crt'),
    servingKey: join(dir, 'serving.key'),
    adminCert: join(dir, 'admin.crt'),
    adminKey: join(dir, 'admin.key'),
    saKey: join(dir, 'sa.key'),
    saPub: join(dir, 'sa.pub'),
    caPem: await readFile(join(dir, 'ca.crt'), 'utf8'),
  };
}

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pidAlive } from '../components/cache.js';
import {
  assumeRole,
  createRole,
  createUserWithAccessKey,
  getCallerIdentity,
  lookupAccessKey,
  startMoto,
  trustPolicy,
  type MotoServer,
} from './moto.js';

describe('moto', () => {
  let moto: MotoServer;
  beforeAll(async () => {
    moto = await startMoto();
  }, 90_000);
  afterAll(async () => {
    await moto?.stop();
  });

  it('keeps accounts apart: a user in 111.. assumes roles in 222.. and 333..', async () => {
    const hub = await createUserWithAccessKey(moto.endpoint, {
      accountId: '111111111111',
      userName: 'mirrorhub-hub',
    });
    expect(hub.arn).toBe('arn:aws:iam::111111111111:user/mirrorhub-hub');
    expect(await getCallerIdentity(moto.endpoint, hub.credentials)).toMatchObject({
      account: '111111111111',
      arn: hub.arn,
    });

    for (const accountId of ['222222222222', '333333333333']) {
      const role = await createRole(moto.endpoint, {
        accountId,
        roleName: 'mirrorhub-follower',
        trustPolicy: trustPolicy({ principals: [hub.arn], externalId: 'x-1' }),
      });
      expect(role.arn).toBe(`arn:aws:iam::${accountId}:role/mirrorhub-follower`);
      const session = await assumeRole(moto.endpoint, {
        credentials: hub.credentials,
        roleArn: role.arn,
        sessionName: 'mirrorhub',
        externalId: 'x-1',
      });
      expect(await getCallerIdentity(moto.endpoint, session)).toMatchObject({
        account: accountId,
        arn: `arn:aws:sts::${accountId}:assumed-role/mirrorhub-follower/mirrorhub`,
      });
      expect(await lookupAccessKey(moto.endpoint, session.accessKeyId)).toEqual({
        accessKeyId: session.accessKeyId,
        secretAccessKey: session.secretAccessKey,
        sessionToken: session.sessionToken,
        active: true,
      });
    }
    expect(await lookupAccessKey(moto.endpoint, hub.credentials.accessKeyId)).toMatchObject({
      secretAccessKey: hub.credentials.secretAccessKey,
      sessionToken: undefined,
    });
    expect(await lookupAccessKey(moto.endpoint, 'AKIANOTKNOWN00000000')).toBeUndefined();
  });

  it('a role name exists per account', async () => {
    await createRole(moto.endpoint, {
      accountId: '444444444444',
      roleName: 'dup',
      trustPolicy: trustPolicy({ principals: ['111111111111'] }),
    });
    await expect(
      createRole(moto.endpoint, {
        accountId: '444444444444',
        roleName: 'dup',
        trustPolicy: trustPolicy({ principals: ['111111111111'] }),
      }),
    ).rejects.toThrow(/EntityAlreadyExists/);
  });
});

describe('moto process handling', () => {
  it('stop() leaves no process behind', async () => {
    const m = await startMoto();
    expect(pidAlive(m.pid)).toBe(true);
    await m.stop();
    expect(pidAlive(m.pid)).toBe(false);
  }, 90_000);

  it('says how to get moto when there is neither python3 nor moto_server', async () => {
    const saved = { ...process.env };
    const empty = await mkdtemp(join(tmpdir(), 'mirrorhub-moto-empty-'));
    process.env.PATH = join(empty, 'bin');
    process.env.MIRRORHUB_CACHE = join(empty, 'cache'); // no cached venv either
    delete process.env.MIRRORHUB_MOTO;
    delete process.env.MIRRORHUB_PYTHON;
    try {
      await expect(startMoto()).rejects.toThrow(
        /^python3 not found on PATH: moto 5\.2\.1 is installed into a venv, .*apt-get install python3 python3-venv.* or set MIRRORHUB_MOTO/,
      );
    } finally {
      for (const k of ['PATH', 'MIRRORHUB_CACHE', 'MIRRORHUB_MOTO', 'MIRRORHUB_PYTHON']) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
      await rm(empty, { recursive: true, force: true });
    }
  });
});

import { describe, expect, it } from 'vitest';

import { defaultAccount } from './index.js';

describe('defaultAccount', () => {
  it.each([
    [0, '111111111111'],
    [1, '222222222222'],
    [8, '999999999999'],
    [9, '100000000010'],
    [10, '100000000011'],
  ])('cluster %i is in account %s', (i, account) => {
    expect(defaultAccount(i)).toBe(account);
  });

  it('gives twelve-digit, distinct accounts to a 20-cluster kit', () => {
    const accounts = Array.from({ length: 20 }, (_, i) => defaultAccount(i));
    expect(accounts.every((a) => /^\d{12}$/.test(a))).toBe(true);
    expect(new Set(accounts).size).toBe(20);
  });
});

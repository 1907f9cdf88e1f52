#!/usr/bin/env node
// Entry point of `mirrorhub` and of the kubectl plugin `kubectl mirrorhub` (an executable named
// kubectl-mirrorhub on PATH): everything is in cli.ts.
import { run } from './cli.js';

const code = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
// Exit once stdout has taken everything (a pipe may still be draining).
process.stdout.write('', () => process.exit(code));

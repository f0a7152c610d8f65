#!/usr/bin/env node
import { run } from './program.js';

// exitCode rather than exit(): output still in the pipes is written before the process ends.
process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});

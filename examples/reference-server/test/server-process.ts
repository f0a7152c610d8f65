import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The built server, which the global setup builds before any test runs. */
export const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));

/** The real process, `node dist/main.js`, with a clean environment: nothing leaks in from the shell. */
export class ServerProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;
  /** Resolves once the process has ended and its output streams are read to their end. */
  private readonly closed: Promise<void>;

  constructor(env: Record<string, string>) {
    this.child = spawn(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.on('data', (chunk: Buffer) => {
      this.stdout += chunk.toString();
    });
    this.child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.closed = new Promise((resolve) => this.child.once('close', () => resolve()));
  }

  /** Resolves with the first match of `pattern` in stdout, as it comes; rejects if the process ends first. */
  waitFor(pattern: RegExp, what: string): Promise<RegExpMatchArray> {
    return new Promise((resolve, reject) => {
      const look = () => {
        const match = this.stdout.match(pattern);
        if (match) {
          this.child.stdout!.off('data', look);
          resolve(match);
        }
        return match !== null;
      };
      if (look()) return;
      // Added after the constructor's listener: each chunk is in `stdout` when this looks.
      this.child.stdout!.on('data', look);
      void this.closed.then(() => {
        if (look()) return;
        this.child.stdout!.off('data', look);
        reject(
          new Error(
            `exited (${this.child.exitCode}) before ${what}.\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`,
          ),
        );
      });
    });
  }

  /** The base URL once it listens; rejects if the process exits first. */
  async listening(): Promise<string> {
    const [, url] = await this.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/, 'listening');
    return url!;
  }

  /** SIGTERM: the drain, then the exit code. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode === null) this.child.kill('SIGTERM');
    return this.exited;
  }

  /** Everything it wrote, both streams. */
  get output(): string {
    return `${this.stdout}${this.stderr}`;
  }
}

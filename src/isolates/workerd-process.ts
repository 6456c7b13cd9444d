import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { Miniflare, type Request as MiniflareRequest, type Response as MiniflareResponse } from 'miniflare';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { tiedToParent } from '../lifecycle';
import { BodyTooLargeError, readBounded } from '../net/bounded-body';
import { childrenOf, commandOf, isAlive, listenerOf, processExists, residentBytes, startTimeOf } from '../system/procfs';

/**
 * miniflare spawns MINIFLARE_WORKERD_PATH: a script of ours that execs the real binary tied
 * to its parent, so that no workerd process outlives the platform process, however it dies.
 */
function tieWorkerdToParent(): void {
  // miniflare's interface is this variable; one the operator set is kept as it is.
  if (process.env.MINIFLARE_WORKERD_PATH) return;
  const [command, args] = tiedToParent(require('workerd').default as string, []);
  if (args.length === 0) return;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'platform-workerd-'));
  const wrapper = path.join(dir, 'workerd');
  writeFileSync(wrapper, `#!/bin/sh\nexec ${[command, ...args].map((part) => `'${part}'`).join(' ')} "$@"\n`, { mode: 0o700 });
  process.env.MINIFLARE_WORKERD_PATH = wrapper;
  // Gone with the process, when it exits rather than being killed.
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
}
tieWorkerdToParent();

/** The workerd release's own date, pinned so that an upgrade changes no behaviour unasked. */
export const COMPATIBILITY_DATE = '2026-04-01';
/** How often the memory of every live workerd process is read. */
const MEMORY_POLL_MS = 20;
/** Output kept from a workerd process, to explain a failed start. */
const STDERR_KEPT = 4096;

export interface WorkerdModule {
  /** A bare name such as `integration.js`: what error messages show of it. */
  name: string;
  type: 'ESModule' | 'CommonJS';
  contents: string;
}

/** A Node-side handler of requests from the isolate (miniflare's `{node}` service). */
export type NodeService = (req: IncomingMessage, res: ServerResponse) => void;

export interface WorkerdProcessOptions {
  /** The first module is the main one. */
  modules: WorkerdModule[];
  /** Past this resident memory the process is killed at once. */
  memoryLimitBytes: number;
  /**
   * Past this resident memory (below memoryLimitBytes) the process is `overMemory`: its
   * owner gives it no new calls and stops it once those in it have ended. workerd's heap
   * grows with the calls it serves, garbage included: a trivial handler's process went
   * from 55 to 150 MiB over 30,000 calls, and a kill there failed the calls in flight.
   */
  recycleAboveBytes?: number;
  /** Where the isolate's fetch() goes; omitted: no outbound network at all. Sockets are refused either way. */
  outbound?: (request: MiniflareRequest) => Promise<MiniflareResponse>;
  /** Service bindings handed to the worker's env. */
  bindings?: Record<string, NodeService>;
}

/** What the isolate answered. */
export interface IsolateAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** Why a process ended before it was disposed of. */
export type EndReason = 'deadline' | 'memory' | 'crashed';

/**
 * What crosses between an isolate and the platform at most, either way (an answer, an
 * outbound request's body or its response): the platform holds each whole in memory, and
 * one tenant's 1 GiB answer took its resident memory from 425 MB to 2.4 GB.
 */
export const MAX_EXCHANGE_BYTES = 10 * 1024 * 1024;

/** An isolate's answer past MAX_EXCHANGE_BYTES: cut off, the isolate kept. */
export class AnswerTooLargeError extends Error {}

/** The process could not start; `message` is workerd's own word on why, when it gave one. */
export class WorkerdStartError extends Error {}

/**
 * One workerd process started through miniflare: integration code runs in it and nowhere
 * else. workerd enforces no CPU or memory limit of its own, so both are enforced from
 * here: a deadline per call and a resident-memory bound, each by SIGKILL of the whole
 * process, after which nothing of it survives.
 */
export class WorkerdProcess {
  private static readonly live = new Set<WorkerdProcess>();
  /** Processes started here, by pid, with their start time (a pid may be used again). */
  private static readonly claimed = new Map<number, string>();
  private static poller?: NodeJS.Timeout;
  endReason?: EndReason;
  /** Past recycleAboveBytes when last read (every MEMORY_POLL_MS). */
  overMemory = false;
  /** Set once disposal began: the process's exit, for every caller. */
  private disposing?: Promise<void>;
  /** Keep-alive to the worker's socket: a call costs no new connection. */
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

  private constructor(
    private readonly miniflare: Miniflare,
    readonly pid: number,
    /** The worker's direct socket. */
    readonly url: URL,
    private readonly memoryLimitBytes: number,
    private readonly recycleAboveBytes = Infinity,
  ) {}

  static async start(options: WorkerdProcessOptions): Promise<WorkerdProcess> {
    let stderr = '';
    const miniflare = new Miniflare({
      modulesRoot: '/',
      modules: options.modules.map(({ name, type, contents }) => ({ type, path: `/${name}`, contents })),
      compatibilityDate: COMPATIBILITY_DATE,
      // node:async_hooks' AsyncLocalStorage: the host tells each console line's invocation by it.
      compatibilityFlags: ['nodejs_als'],
      // No outbound network at all unless a caller routes it through the egress guard.
      outboundService: options.outbound ?? { network: { allow: [], deny: [] } },
      serviceBindings: Object.fromEntries(Object.entries(options.bindings ?? {}).map(([name, node]) => [name, { node }])),
      host: '127.0.0.1',
      port: 0,
      // A socket straight to the worker, past miniflare's entry worker: the platform's calls take it.
      unsafeDirectSockets: [{ host: '127.0.0.1', port: 0 }],
      handleRuntimeStdio: (stdout: Readable, err: Readable) => {
        stdout.resume();
        err.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-STDERR_KEPT)));
      },
    });
    let url: URL;
    try {
      url = await miniflare.ready;
    } catch {
      await miniflare.dispose().catch(() => undefined);
      throw new WorkerdStartError(uncaught(stderr) ?? 'the isolate runtime failed to start');
    }
    const pid = findWorkerdPid(Number(url.port), WorkerdProcess.claimed);
    if (pid === undefined) {
      await miniflare.dispose().catch(() => undefined);
      throw new WorkerdStartError('the isolate runtime started, but its process was not found');
    }
    WorkerdProcess.claimed.set(pid, startTimeOf(pid));
    const started = new WorkerdProcess(miniflare, pid, await miniflare.unsafeGetDirectURL(), options.memoryLimitBytes, options.recycleAboveBytes);
    WorkerdProcess.watch(started);
    return started;
  }

  /**
   * A call into the isolate that may take at most `deadlineMs`: past it the process is
   * killed, the call fails, and the process is gone for every other caller too.
   */
  call(path: string, request: { method?: string; headers?: Record<string, string>; body?: Buffer }, deadlineMs: number): Promise<IsolateAnswer> {
    const deadline = setTimeout(() => this.kill('deadline'), deadlineMs);
    return this.send(path, request).finally(() => clearTimeout(deadline));
  }

  /**
   * One request on a kept-alive socket. One that workerd closed as idle just as the request
   * went out fails before any answer (ECONNRESET; more often when the machine is busy): the
   * request never reached the isolate, and goes again, once, on a fresh socket.
   */
  private send(path: string, request: { method?: string; headers?: Record<string, string>; body?: Buffer }, again = true): Promise<IsolateAnswer> {
    return new Promise<IsolateAnswer>((resolve, reject) => {
      const outgoing = http.request(new URL(path, this.url), { method: request.method ?? 'GET', headers: request.headers, agent: this.agent });
      let answered = false;
      outgoing.on('error', (err: NodeJS.ErrnoException) => {
        const closedWhileIdle = again && !answered && outgoing.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE');
        if (closedWhileIdle && !this.endReason) resolve(this.send(path, request, false));
        else reject(err);
      });
      outgoing.on('response', (response) => {
        answered = true;
        readBounded(response, MAX_EXCHANGE_BYTES).then(
          (body) => resolve({ status: response.statusCode ?? 502, headers: response.headers, body }),
          (err: Error) => reject(err instanceof BodyTooLargeError ? new AnswerTooLargeError(`its answer ${err.message}`) : err),
        );
      });
      outgoing.end(request.body);
    });
  }

  kill(reason: EndReason): void {
    if (this.endReason || this.disposing) return;
    this.endReason = reason;
    try {
      process.kill(this.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }

  get alive(): boolean {
    return !this.disposing && !this.endReason && isAlive(this.pid);
  }

  /** Resolves once the process has exited, however many callers ask. */
  dispose(): Promise<void> {
    this.disposing ??= (async () => {
      WorkerdProcess.live.delete(this);
      this.agent.destroy();
      // miniflare SIGKILLs its workerd process and waits for it to exit.
      await this.miniflare.dispose().catch(() => undefined);
      WorkerdProcess.claimed.delete(this.pid);
    })();
    return this.disposing;
  }

  /** One timer reads the memory of every live process: over its bound a process is killed, over its recycling bound marked. */
  private static watch(started: WorkerdProcess): void {
    WorkerdProcess.live.add(started);
    WorkerdProcess.poller ??= setInterval(() => {
      for (const process of WorkerdProcess.live) {
        const rss = residentBytes(process.pid);
        if (rss === undefined) {
          // Gone, not merely unreadable for a moment (out of file descriptors): a live one stays watched.
          if (processExists(process.pid)) continue;
          if (!process.endReason) process.endReason = 'crashed';
          WorkerdProcess.live.delete(process);
          WorkerdProcess.claimed.delete(process.pid);
        } else if (rss > process.memoryLimitBytes) {
          process.kill('memory');
          WorkerdProcess.live.delete(process);
          WorkerdProcess.claimed.delete(process.pid);
        } else if (rss > process.recycleAboveBytes) {
          process.overMemory = true;
        }
      }
      if (WorkerdProcess.live.size === 0) {
        clearInterval(WorkerdProcess.poller);
        WorkerdProcess.poller = undefined;
      }
    }, MEMORY_POLL_MS).unref();
  }
}

/**
 * The workerd child of this process that listens on `port`. The one workerd child not
 * claimed yet (by pid and start time) is it: it listens, so it has started, and no read of
 * the host's socket table is needed, which lists every socket of the host, thousands under
 * load (read once per child, it made each cold start in the bench tens of ms slower than
 * the one before). Otherwise (several starting at once, an operator's binary of another
 * name) the table says which child listens there, read once.
 */
function findWorkerdPid(port: number, claimed: ReadonlyMap<number, string>): number | undefined {
  const children = childrenOf(process.pid);
  const unclaimed = children.filter((pid) => commandOf(pid) === 'workerd' && claimed.get(pid) !== startTimeOf(pid));
  return unclaimed.length === 1 ? unclaimed[0] : listenerOf(port, children);
}

/** workerd's "Uncaught SyntaxError: …" line, without the file paths of this host. */
function uncaught(stderr: string): string | undefined {
  const match = /Uncaught (.+)/.exec(stderr);
  return match?.[1]?.trim().slice(0, 300);
}

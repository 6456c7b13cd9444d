import { parseArgs } from 'node:util';
import { ApiClient, CliError } from './api-client';
import { listDeliveries, replayDelivery, showDelivery } from './deliveries';
import { pauseOrResume, portalLink, replayFailed, showHealth, showOperation } from './operations';
import type { Output } from './format';
import type { Terminal } from './authoring';
import { install, listIntegrations, moveToVersion, setConfiguration } from './integrations';
import { PLATFORM_VERSION } from '../version';
import { createOrg, createUser } from './tenancy';
import { sendEvents } from './events';
import { showLogs } from './logs';

const USAGE = `platform: build, publish and operate integrations

Usage:
  platform new <name> [--organization <org>]
  platform check [dir] [--env <name>]
  platform publish [dir] [--env <name>]      --env: the manifest's envs.<name> merged over it
  platform dev [dir] (--installation ID … | --all) [--env <name>]
                           uploads each save as a development version that the chosen
                           installations (of the owning organization) run, and streams
                           their logs; Ctrl-C returns them to the latest version
  platform integrations list
  platform install <name> --org <org> [--space <id> | --site <id>] [--install-link <token>]
  platform config set <installation> key=value [key=value …]
  platform pin <installation> <version>     keep it on a version through publishes
  platform unpin <installation>             back to the latest, moved by publishes again
  platform orgs create <id> --subdomain <subdomain> --title <title>
  platform users create <id> --org <org> [--org <org> …]
  platform events send [file.json | -]      one event, an array, or {"events": [...]}
  platform deliveries list [--installation ID] [--status pending|delivered|failed|skipped|held]
                           [--event-type TYPE] [--event-id ID] [--since ISO] [--until ISO]
                           [--org ID] [--limit N] [--page-token T]
  platform deliveries show <delivery id>
  platform deliveries replay <delivery id>
  platform deliveries replay-failed --installation ID [--since ISO] [--until ISO]
                           in the background (an operation), followed with a progress bar
  platform installations health <id>        its receiver: failures in a row, last 24 h
  platform installations pause <id>
  platform installations portal-link <id> [--expires SECONDS]
                           a link for the receiver: its deliveries, replays and signing
                           secret, without an account (1 h unless given, at most 7 days)
  platform installations resume <id> [--held deliver|drop] [--replay-failed]
                           what was held while the platform paused it: delivered in
                           order of ingest (the default) or dropped; --replay-failed also
                           replays what failed since the trouble began; followed to the end
  platform operations show|cancel <operation id>
  platform logs <integration> [--installation ID] [--level debug|info|warn|error]
                              [--since ISO] [--limit N] [--follow]
                           its code's console lines and errors, for its owners;
                           --follow prints each new one until Ctrl-C

Options:
  --api URL      API base URL (env PLATFORM_API_URL, default http://localhost:8080)
  --token TOKEN  bearer token (env PLATFORM_TOKEN)
  --json         machine-readable output
  --version      the platform's version
  -h, --help     this text`;

export async function run(argv: string[], env: NodeJS.ProcessEnv, print: (text: string) => void): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      api: { type: 'string' },
      token: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
      version: { type: 'boolean', default: false },
      installation: { type: 'string', multiple: true },
      all: { type: 'boolean', default: false },
      status: { type: 'string' },
      'event-type': { type: 'string' },
      'event-id': { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      org: { type: 'string', multiple: true },
      subdomain: { type: 'string' },
      title: { type: 'string' },
      limit: { type: 'string' },
      'page-token': { type: 'string' },
      organization: { type: 'string' },
      space: { type: 'string' },
      site: { type: 'string' },
      'install-link': { type: 'string' },
      env: { type: 'string' },
      level: { type: 'string' },
      follow: { type: 'boolean', short: 'f', default: false },
      held: { type: 'string' },
      'replay-failed': { type: 'boolean', default: false },
      expires: { type: 'string' },
    },
  });
  const [group, command, id] = positionals;
  if (values.version) return print(`platform ${PLATFORM_VERSION}`);
  if (values.help || !group) return print(USAGE);
  const api = new ApiClient((values.api ?? env.PLATFORM_API_URL ?? 'http://localhost:8080').replace(/\/+$/, ''), values.token ?? env.PLATFORM_TOKEN);
  const output: Output = { json: values.json, print };
  /** `--org` is given once, but for `users create`. */
  const org = () => {
    if ((values.org?.length ?? 0) > 1) throw new CliError('--org is given once here', 'platform --help', 2);
    return values.org?.[0];
  };
  /** `--installation` is given once, but for `dev`. */
  const installation = () => {
    if ((values.installation?.length ?? 0) > 1) throw new CliError('--installation is given once here', 'platform --help', 2);
    return values.installation?.[0];
  };
  const terminal: Terminal = { print, progress: (text) => process.stderr.write(`${text}\n`), interactive: Boolean(process.stdin.isTTY) };
  // The authoring commands load the bundler and the isolates' runtime (a second of a CPU's
  // time): only they do, so that the operators' commands start in tens of milliseconds.
  switch (group) {
    case 'new':
      return (await import('./authoring.js')).newIntegration(terminal, process.cwd(), command, values.organization);
    case 'check': {
      const checked = await (await import('./authoring.js')).checkIntegration(terminal, command, values.env);
      return print(`${checked.manifest.name} is valid${checked.bundle ? ` (components: ${checked.componentIds.join(', ') || 'none'})` : ''}`);
    }
    case 'publish':
      return void (await (await import('./authoring.js')).publishIntegration(terminal, api, env, command, values.env));
    case 'dev': {
      const stopped = new AbortController();
      process.once('SIGINT', () => stopped.abort());
      return (await import('./dev.js')).runDev(terminal, api, output, env, command, { installations: values.installation ?? [], all: values.all, manifestEnv: values.env, stopped: stopped.signal });
    }
    case 'install':
      return install(api, output, command, { org: org(), space: values.space, site: values.site }, values['install-link']);
  }
  if (group === 'orgs' && command === 'create') return createOrg(api, output, id, { subdomain: values.subdomain, title: values.title });
  if (group === 'users' && command === 'create') return createUser(api, output, id, values.org ?? []);
  if (group === 'events' && command === 'send') {
    if (positionals.length > 3) throw new CliError('events send takes one file', 'platform events send [file.json | -]: put several files\' events in one array', 2);
    return sendEvents(api, output, id);
  }
  if (group === 'integrations' && command === 'list') return listIntegrations(api, output);
  if (group === 'logs') {
    if (!command) throw new CliError('missing <integration>', 'platform logs <integration> [--follow]', 2);
    const stopped = new AbortController();
    if (values.follow) process.once('SIGINT', () => stopped.abort());
    return showLogs(api, output, command, { installation: installation(), level: values.level, since: values.since, limit: values.limit, follow: values.follow, stopped: stopped.signal });
  }
  if (group === 'config' && command === 'set') return setConfiguration(api, output, id, positionals.slice(3));
  if (group === 'pin' || group === 'unpin') return moveToVersion(api, output, command, id, group === 'pin');
  const needId = () => id ?? Promise.reject(new CliError(`missing <delivery id>`, `platform deliveries ${command} <delivery id>`, 2));
  if (group === 'deliveries') {
    switch (command) {
      case 'list':
        return listDeliveries(api, output, { installation: installation(), status: values.status, eventType: values['event-type'], eventId: values['event-id'], since: values.since, until: values.until, org: org(), limit: values.limit, pageToken: values['page-token'] });
      case 'show':
        return showDelivery(api, output, await needId());
      case 'replay':
        return replayDelivery(api, output, await needId());
      case 'replay-failed':
        return replayFailed(api, output, terminal.progress, { installation: installation(), since: values.since, until: values.until });
    }
  }
  if (group === 'installations' && command === 'health') return showHealth(api, output, id);
  if (group === 'installations' && command === 'portal-link') return portalLink(api, output, id, values.expires);
  if (group === 'installations' && (command === 'pause' || command === 'resume')) return pauseOrResume(api, output, terminal.progress, id, command, { held: values.held, replayFailed: values['replay-failed'] });
  if (group === 'operations' && (command === 'show' || command === 'cancel')) return showOperation(api, output, id, command === 'cancel');
  throw new CliError(`unknown command "${positionals.join(' ')}"`, 'platform --help lists the commands', 2);
}

/** The one top-level handler: a CliError prints its message and hint; anything else, its message. */
export function main(): void {
  // A reader that stopped reading (`| head`) is no failure of the command.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  });
  run(process.argv.slice(2), process.env, (text) => process.stdout.write(`${text}\n`)).catch((err: unknown) => {
    const usage = (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    const error = err instanceof CliError ? err : new CliError(err instanceof Error ? err.message : String(err), usage ? 'platform --help lists the options' : undefined, usage ? 2 : 1);
    process.stderr.write(`error: ${error.message}\n${error.hint ? `hint: ${error.hint}\n` : ''}`);
    process.exitCode = error.exitCode;
  });
}

/**
 * `@gitbook/api` for integrations that import it without depending on it (in GitBook's
 * monorepo it came with `@gitbook/runtime`): the bundler uses the integration's own copy
 * when it has one, this otherwise. Types need nothing (they are erased); of its values,
 * the enums ported code uses, and the client, which is not this platform's.
 */
import { ExposableError } from './errors';

/** A member's value is its name in kebab case, as in GitBook's enums (`LinkExternal` -> `link-external`). */
const kebab = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
const enumByName = <T extends Record<string, string>>(): T => new Proxy({} as T, { get: (_, key) => (typeof key === 'string' ? kebab(key) : undefined) });

export const ContentKitIcon = enumByName();
export const GitSyncOperationState = enumByName();

/** GitBook's API client: its content API is not modelled here; `context.api` is this platform's. */
export class GitBookAPI {
  constructor() {
    throw new ExposableError("GitBookAPI: GitBook's API client is not this platform's; use context.api (the installation's own API)", 501);
  }
}

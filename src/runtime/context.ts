/**
 * What every handler gets besides its input, under SPEC.md's names and GitBook's
 * (`RuntimeContext`, `RuntimeEnvironment`, the callback types), so that code written for
 * GitBook's runtime compiles against this one unchanged.
 */
import type { PlatformApi } from './api';
import type { IntegrationEnvironment, IntegrationEvent } from './types';

/** Plain JSON-like data: a component's props and state. */
export type PlainObject = { [key: string]: PlainObjectValue };
type PlainObjectValue = number | string | boolean | PlainObject | undefined | null | PlainObjectValue[];

export interface IntegrationContext<Environment extends IntegrationEnvironment = IntegrationEnvironment> {
  environment: Environment;
  /** The platform API with the installation's token: its own installation only. */
  api: PlatformApi;
  /** GitBook's integration-wide client and tasks: the client is `api` here; tasks are not modelled (queueTask rejects, saying so). */
  integration: { api: PlatformApi; queueTask(input: { task: object; schedule?: number }): Promise<void> };
  /** Work that goes on after the response (up to 30 s). */
  waitUntil(promise: Promise<unknown>): void;
}

/**
 * GitBook's environment type: the installation's configuration typed, at the installation
 * and at its space or site.
 */
export type RuntimeEnvironment<InstallationConfiguration = Record<string, unknown>, SpaceOrSiteConfiguration = Record<string, unknown>> = IntegrationEnvironment & {
  installation?: NonNullable<IntegrationEnvironment['installation']> & { configuration: InstallationConfiguration };
  spaceInstallation?: NonNullable<IntegrationEnvironment['spaceInstallation']> & { configuration: SpaceOrSiteConfiguration };
  siteInstallation?: NonNullable<IntegrationEnvironment['siteInstallation']> & { configuration: SpaceOrSiteConfiguration };
};

export type RuntimeContext<Environment extends IntegrationEnvironment = IntegrationEnvironment> = IntegrationContext<Environment>;

/** A handler: its input, then the context. */
export type RuntimeCallback<Input extends unknown[], Result, Context extends RuntimeContext = RuntimeContext> = (...args: [...Input, Context]) => Result;

export type FetchEventCallback<Context extends RuntimeContext = RuntimeContext> = RuntimeCallback<[Request], Promise<Response>, Context>;

/** One event type's handler. */
export type EventCallback<Type extends IntegrationEvent['type'] = IntegrationEvent['type'], Context extends RuntimeContext = RuntimeContext> = RuntimeCallback<[Extract<IntegrationEvent, { type: Type }>], Promise<unknown>, Context>;

/** An event of one type. */
export type EventByType<Type extends IntegrationEvent['type']> = Extract<IntegrationEvent, { type: Type }>;

/** GitBook's site script injection (`site:script:inject`, refused for every integration but the platform's own): the type only, for code that declares it. */
export type FetchPublishScriptEventCallback<Context extends RuntimeContext = RuntimeContext> = RuntimeCallback<[{ type: 'fetch_published_script'; [field: string]: unknown }], Promise<Response | undefined>, Context>;

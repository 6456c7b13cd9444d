/**
 * The integration SDK, imported by integration code as `integration-platform/runtime`
 * (SPEC.md: createIntegration, createComponent, createOAuthHandler). It runs inside the
 * integration's workerd isolate: `createIntegration()`'s result is the worker itself.
 */
import type { PlatformApi } from './api';
import type { ComponentDefinition } from './components';
import { handleEnvelope, type WorkerContext, type WorkerEnv } from './envelope';
import type { IntegrationEnvironment, IntegrationEvent } from './types';

export * from './types';
export { ExposableError } from './errors';
export { createComponent, type ComponentDefinition, type ComponentElement } from './components';
export { createOAuthHandler, type OAuthConfig } from './oauth';
export type { PlatformApi, InstallationResource } from './api';

/** Marks what createIntegration returns, so the platform can tell a script's entry point. */
export const INTEGRATION_BRAND = '__platformIntegration';

/** What every handler gets besides its input. */
export interface IntegrationContext {
  environment: IntegrationEnvironment;
  api: PlatformApi;
  /** Work that goes on after the response (up to 30 s). */
  waitUntil(promise: Promise<unknown>): void;
}

export type EventHandlers = {
  [Type in Exclude<IntegrationEvent['type'], 'fetch' | 'ui_render'>]?: (event: Extract<IntegrationEvent, { type: Type }>, context: IntegrationContext) => Promise<unknown>;
};

export interface IntegrationDefinition {
  fetch?: (request: Request, context: IntegrationContext) => Promise<Response>;
  components?: ComponentDefinition<any, any>[];
  events?: EventHandlers;
}

/** The worker module the platform loads: workerd calls its `fetch` with each envelope. */
export interface Integration {
  readonly [INTEGRATION_BRAND]: true;
  readonly componentIds: string[];
  /** The event types it has handlers for: the platform sends it only these. */
  readonly eventTypes: string[];
  fetch(request: Request, env?: WorkerEnv, ctx?: WorkerContext): Promise<Response>;
}

/** The entry point of an integration's script: its default export. */
export function createIntegration(definition: IntegrationDefinition): Integration {
  const components = definition.components ?? [];
  const componentIds = components.map((component) => component.componentId);
  const duplicate = componentIds.find((id, i) => componentIds.indexOf(id) !== i);
  if (duplicate) throw new TypeError(`component "${duplicate}" is registered twice`);
  return {
    [INTEGRATION_BRAND]: true,
    componentIds,
    eventTypes: Object.keys(definition.events ?? {}).filter((type) => typeof definition.events?.[type as keyof EventHandlers] === 'function'),
    fetch: (request, env, ctx) => handleEnvelope(definition, components, request, env, ctx),
  };
}

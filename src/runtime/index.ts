/**
 * The integration SDK, imported by integration code as `integration-platform/runtime`
 * (SPEC.md: createIntegration, createComponent, createOAuthHandler), with GitBook's names
 * beside SPEC.md's. It runs inside the integration's workerd isolate: `createIntegration()`'s
 * result is the worker itself.
 */
import type { IntegrationContext } from './context';
import type { IntegrationDefinition } from './definition';
import { handleEnvelope, type WorkerContext, type WorkerEnv } from './envelope';

export * from './types';
export * from './context';
export { ExposableError } from './errors';
export { Logger } from './logger';
export { createComponent, type ComponentDefinition, type ComponentElement, type ComponentInstance, type ComponentRenderCache, type ComponentActionResult } from './components';
export { createOAuthHandler, getOAuthToken, defaultOAuthExtractCredentials, type OAuthConfig, type OAuthConfiguration, type OAuthResponse } from './oauth';
export type { PlatformApi, InstallationResource } from './api';
export type { EventHandlers, IntegrationDefinition } from './definition';

/** Marks what createIntegration returns, so the platform can tell a script's entry point. */
export const INTEGRATION_BRAND = '__platformIntegration';

/** The worker module the platform loads: workerd calls its `fetch` with each envelope. */
export interface Integration {
  readonly [INTEGRATION_BRAND]: true;
  readonly componentIds: string[];
  /** The event types it has handlers for: the platform sends it only these. */
  readonly eventTypes: string[];
  fetch(request: Request, env?: WorkerEnv, ctx?: WorkerContext): Promise<Response>;
}

/** The entry point of an integration's script: its default export. */
export function createIntegration<Context extends IntegrationContext = IntegrationContext>(definition: IntegrationDefinition<Context>): Integration {
  const components = definition.components ?? [];
  const componentIds = components.map((component) => component.componentId);
  const duplicate = componentIds.find((id, i) => componentIds.indexOf(id) !== i);
  if (duplicate) throw new TypeError(`component "${duplicate}" is registered twice`);
  const handled = (handler: unknown) => typeof handler === 'function' || (Array.isArray(handler) && handler.length > 0 && handler.every((each) => typeof each === 'function'));
  return {
    [INTEGRATION_BRAND]: true,
    componentIds,
    eventTypes: Object.entries(definition.events ?? {}).filter(([, handler]) => handled(handler)).map(([type]) => type),
    fetch: (request, env, ctx) => handleEnvelope(definition as IntegrationDefinition, components, request, env, ctx),
  };
}

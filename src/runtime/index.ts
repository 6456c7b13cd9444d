/**
 * The integration SDK, imported by integration code as `integration-platform/runtime`
 * (SPEC.md: createIntegration, createComponent).
 */

/** Marks what createIntegration returns, so the platform can tell a script's entry point. */
export const INTEGRATION_BRAND = '__platformIntegration';

export interface ComponentDefinition<Props = Record<string, unknown>, State = Record<string, unknown>> {
  componentId: string;
  initialState?: (props: Props) => State;
  action?: (element: { props: Props; state: State }, action: { action: string; [key: string]: unknown }, context: unknown) => Promise<{ state?: State }>;
  render: (element: { props: Props; state: State }, context: unknown) => Promise<unknown>;
}

export interface IntegrationDefinition {
  fetch?: (request: Request, context: unknown) => Promise<Response>;
  components?: ComponentDefinition<any, any>[];
  events?: Record<string, (event: unknown, context: unknown) => Promise<unknown>>;
}

export interface Integration extends IntegrationDefinition {
  readonly [INTEGRATION_BRAND]: true;
  readonly componentIds: string[];
}

export function createComponent<Props = Record<string, unknown>, State = Record<string, unknown>>(definition: ComponentDefinition<Props, State>): ComponentDefinition<Props, State> {
  if (!definition || typeof definition.componentId !== 'string' || !definition.componentId) throw new TypeError('createComponent needs a componentId');
  if (typeof definition.render !== 'function') throw new TypeError(`component "${definition.componentId}" needs a render function`);
  return definition;
}

/** The entry point of an integration's script: its default export. */
export function createIntegration(definition: IntegrationDefinition): Integration {
  const components = definition.components ?? [];
  const componentIds = components.map((component) => component.componentId);
  const duplicate = componentIds.find((id, i) => componentIds.indexOf(id) !== i);
  if (duplicate) throw new TypeError(`component "${duplicate}" is registered twice`);
  return { ...definition, components, componentIds, [INTEGRATION_BRAND]: true };
}

import { ExposableError } from './errors';
import type { ComponentAction, IntegrationContext, UIElement } from './index';

export interface ComponentElement<Props, State> {
  props: Props;
  state: State;
}

/** SPEC.md's createComponent parameter. */
export interface ComponentDefinition<Props = Record<string, unknown>, State = Record<string, unknown>> {
  componentId: string;
  initialState?: (props: Props) => State;
  action?: (element: ComponentElement<Props, State>, action: ComponentAction, context: IntegrationContext) => Promise<{ state?: State }>;
  render: (element: ComponentElement<Props, State>, context: IntegrationContext) => Promise<UIElement>;
}

export function createComponent<Props = Record<string, unknown>, State = Record<string, unknown>>(definition: ComponentDefinition<Props, State>): ComponentDefinition<Props, State> {
  if (!definition || typeof definition.componentId !== 'string' || !definition.componentId) throw new TypeError('createComponent needs a componentId');
  if (typeof definition.render !== 'function') throw new TypeError(`component "${definition.componentId}" needs a render function`);
  return definition;
}

/** DESIGN.md §3: the given state, else initialState(props); an action may replace it; then render. */
export async function renderComponent(
  component: ComponentDefinition<any, any>,
  event: { props?: Record<string, unknown>; state?: Record<string, unknown>; action?: ComponentAction },
  context: IntegrationContext,
): Promise<{ type: 'element'; state: Record<string, unknown>; props: Record<string, unknown>; element: UIElement }> {
  const props = event.props ?? {};
  let state = event.state ?? component.initialState?.(props) ?? {};
  if (event.action) {
    if (typeof event.action.action !== 'string') throw new ExposableError('action.action must name the action');
    if (component.action) {
      const result = await component.action({ props, state }, event.action, context);
      if (result && typeof result === 'object' && result.state !== undefined) state = result.state;
    }
  }
  const element = await component.render({ props, state }, context);
  return { type: 'element', state, props, element };
}

import { ExposableError } from './errors';
import type { IntegrationContext, PlainObject } from './context';
import type { ComponentAction, UIElement } from './types';

/** How long the caller may keep a render (GitBook's `setCache`): sent as Cache-Control. */
export interface ComponentRenderCache {
  maxAge: number;
}

/** What `render` and `action` get: SPEC.md's element, with GitBook's context, cache and state bindings. */
export interface ComponentInstance<Props = PlainObject, State = PlainObject> {
  props: Props;
  state: State;
  /** Where the component renders, as the caller said (empty when it said nothing). */
  context: Record<string, unknown>;
  setCache(cache: ComponentRenderCache): void;
  /** A binding of an element's value to a state key. */
  dynamicState<Key extends keyof State>(key: Key): { $state: Key };
}
/** SPEC.md's name for it. */
export type ComponentElement<Props, State> = ComponentInstance<Props, State>;

/**
 * What an action answers: new state and props to render with (GitBook's link unfurl
 * answers props), or `{type: 'complete', returnValue}` to end the interaction without a
 * render, or nothing.
 */
export type ComponentActionResult<Props, State> = { type?: 'element'; props?: Props; state?: State } | { type: 'complete'; returnValue?: PlainObject } | undefined | void;

/** The actions a component takes: SPEC.md's `{action, ...}`, or those it declares (GitBook's third type parameter). */
export type ActionOf<Action> = Action extends void ? ComponentAction : ComponentAction | Action;

/** SPEC.md's createComponent parameter, with GitBook's forms of each member and its type parameters (props, state, action, context). */
export interface ComponentDefinition<Props = PlainObject, State = PlainObject, Action = void, Context extends IntegrationContext = IntegrationContext> {
  componentId: string;
  /** State before any is given: a value, or made from the props (and where it renders). */
  initialState?: State | ((props: Props, renderContext: Record<string, unknown>, context: Context) => State);
  action?: (element: ComponentInstance<Props, State>, action: ActionOf<Action>, context: Context) => Promise<ComponentActionResult<Props, State>>;
  render: (element: ComponentInstance<Props, State>, context: Context) => Promise<UIElement | unknown>;
}

export function createComponent<Props = PlainObject, State = PlainObject, Action = void, Context extends IntegrationContext = IntegrationContext>(definition: ComponentDefinition<Props, State, Action, Context>): ComponentDefinition<Props, State, Action, Context> {
  if (!definition || typeof definition.componentId !== 'string' || !definition.componentId) throw new TypeError('createComponent needs a componentId');
  if (typeof definition.render !== 'function') throw new TypeError(`component "${definition.componentId}" needs a render function`);
  return definition;
}

/** What a render answers, and how long it may be kept. */
export interface RenderOutput {
  body: { type: 'element'; state: unknown; props: unknown; element: unknown } | { type: 'complete'; returnValue?: PlainObject };
  cache?: ComponentRenderCache;
}

/**
 * DESIGN.md §3: the given state, else the initial state; an action may replace state and
 * props, or complete the interaction; then render.
 */
export async function renderComponent(
  component: ComponentDefinition<any, any, any, any>,
  event: { props?: Record<string, unknown>; state?: Record<string, unknown>; action?: ComponentAction; context?: Record<string, unknown> },
  context: IntegrationContext,
): Promise<RenderOutput> {
  let props = event.props ?? {};
  const where = event.context ?? {};
  const initial = component.initialState;
  let state = event.state ?? (typeof initial === 'function' ? initial(props, where, context) : initial) ?? {};
  let cache: ComponentRenderCache | undefined;
  const instance = (): ComponentInstance<any, any> => ({ props, state, context: where, setCache: (wanted) => void (cache = wanted), dynamicState: (key) => ({ $state: key }) });
  if (event.action) {
    if (typeof event.action.action !== 'string') throw new ExposableError('action.action must name the action');
    const result = component.action ? await component.action(instance(), event.action, context) : undefined;
    if (result && typeof result === 'object') {
      if (result.type === 'complete') return { body: { type: 'complete', ...(result.returnValue !== undefined && { returnValue: result.returnValue }) }, cache };
      if (result.state !== undefined) state = result.state;
      if (result.props !== undefined) props = result.props;
    }
  }
  const element = await component.render(instance(), context);
  return { body: { type: 'element', state, props, element }, cache };
}

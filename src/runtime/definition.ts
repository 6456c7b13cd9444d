import type { ComponentDefinition } from './components';
import type { EventCallback, FetchEventCallback, IntegrationContext } from './context';
import type { IntegrationEvent } from './types';

/** Handlers by event type; GitBook's code may give several for one type. */
export type EventHandlers<Context extends IntegrationContext = IntegrationContext> = {
  [Type in Exclude<IntegrationEvent['type'], 'fetch' | 'ui_render'>]?: EventCallback<Type, Context> | EventCallback<Type, Context>[];
};

export interface IntegrationDefinition<Context extends IntegrationContext = IntegrationContext> {
  fetch?: FetchEventCallback<Context>;
  components?: ComponentDefinition<any, any, any, Context>[];
  events?: EventHandlers<Context>;
}


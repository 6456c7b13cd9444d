import { createComponent, createIntegration, ExposableError, Logger, type FetchEventCallback, type RuntimeContext, type RuntimeEnvironment } from 'integration-platform/runtime';

const logger = Logger('gitbook-style');

type Environment = RuntimeEnvironment<{ greeting?: string; forward_url?: string }>;
type Context = RuntimeContext<Environment>;

type Props = { url?: string; title?: string };
type State = { clicks: number };
type Action = { action: '@link.unfurl'; url: string } | { action: 'click' } | { action: 'done' };

/** A link card: link unfurl gives it its props, a button counts, `done` ends the interaction. */
const linkCard = createComponent<Props, State, Action, Context>({
  componentId: 'link-card',
  initialState: { clicks: 0 },
  async action(element, action) {
    switch (action.action) {
      case '@link.unfurl':
        return { props: { url: action.url, title: new URL(action.url).hostname } };
      case 'click':
        return { state: { clicks: element.state.clicks + 1 } };
      case 'done':
        return { type: 'complete', returnValue: { clicks: element.state.clicks } };
    }
  },
  async render(element, context) {
    element.setCache({ maxAge: 60 });
    const greeting = context.environment.installation?.configuration.greeting ?? 'Hello';
    return (
      <block>
        <text>
          {greeting}, {element.props.title ?? 'no link yet'}
        </text>
        {element.state.clicks > 0 && <text>Clicked {element.state.clicks} times</text>}
        <button label="Click" onPress={{ action: 'click' }} />
      </block>
    );
  },
});

/** The public endpoint, routed by path as GitBook's integrations route theirs. */
const handleFetch: FetchEventCallback<Context> = async (request, context) => {
  const path = new URL(request.url).pathname.split('/public')[1] || '/';
  logger.info(`${request.method} ${path}`);
  switch (path) {
    case '/environment': {
      const { installation, spaceInstallation, siteInstallation, integration } = context.environment;
      return Response.json({ installation, spaceInstallation, siteInstallation, contentEndpoint: integration.urls.publicContentEndpoint, docs: integration.externalLinks[0]?.url, mode: process.env.NODE_ENV });
    }
    case '/teapot':
      throw new ExposableError('I am a teapot', 418);
    case '/fetch': {
      // A fetch that cannot reach its destination rejects, as fetch does.
      try {
        const answer = await fetch(new URL(request.url).searchParams.get('url')!);
        return Response.json({ rejected: false, status: answer.status });
      } catch (error) {
        return Response.json({ rejected: true, name: (error as Error).name, message: (error as Error).message });
      }
    }
    case '/task':
      await context.integration.queueTask({ task: { type: 'sync' } });
      return Response.json({ queued: true });
    default:
      return new Response('Not found', { status: 404 });
  }
};

/** Both handlers of an event run; each forwards it, tagged. */
const forward = (tag: string) => async (event: { eventId: string }, context: Context) => {
  const url = context.environment.installation?.configuration.forward_url;
  if (url) await fetch(url, { method: 'POST', body: JSON.stringify({ tag, eventId: event.eventId }) });
};

export default createIntegration<Context>({
  fetch: handleFetch,
  components: [linkCard],
  events: { space_content_updated: [forward('first'), forward('second')] },
});

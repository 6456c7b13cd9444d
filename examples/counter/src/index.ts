import { createComponent, createIntegration } from 'integration-platform/runtime';

const counter = createComponent<{ step?: number }, { count: number }>({
  componentId: 'counter',
  initialState: () => ({ count: 0 }),
  action: async (element, action) => (action.action === 'increment' ? { state: { count: element.state.count + (element.props.step ?? 1) } } : {}),
  render: async (element) => ({
    type: 'block',
    children: [
      { type: 'text', text: `Clicked ${element.state.count} times` },
      { type: 'button', label: 'Click me', onPress: { action: 'increment' } },
    ],
  }),
});

export default createIntegration({ components: [counter] });

/** Files of a new integration (`platform new`), as path -> content. */
export function scaffoldFiles(name: string, organization: string): Record<string, string> {
  return {
    'platform-manifest.yaml': [
      `name: ${name}`,
      `title: ${titleOf(name)}`,
      'description: A new integration.',
      `organization: ${organization}`,
      'visibility: private',
      'scopes: []',
      'script: src/index.ts',
      'blocks:',
      '  - id: counter',
      '    title: Counter',
      '    description: A button that counts its clicks.',
      'configurations:',
      '  account:',
      '    properties:',
      '      greeting: { type: string, title: Greeting, default: Hello }',
      '',
    ].join('\n'),
    'src/index.ts': [
      "import { createComponent, createIntegration } from 'integration-platform/runtime';",
      '',
      'const counter = createComponent<Record<string, never>, { count: number }>({',
      "  componentId: 'counter',",
      '  initialState: () => ({ count: 0 }),',
      "  action: async (element, action) => (action.action === 'increment' ? { state: { count: element.state.count + 1 } } : {}),",
      '  render: async (element) => ({',
      "    type: 'block',",
      "    children: [{ type: 'button', label: `Clicked ${element.state.count} times`, onPress: { action: 'increment' } }],",
      '  }),',
      '});',
      '',
      'export default createIntegration({ components: [counter] });',
      '',
    ].join('\n'),
    'package.json': `${JSON.stringify({ name, private: true, scripts: { check: 'platform check', publish: 'platform publish' }, devDependencies: { 'integration-platform': '*' } }, null, 2)}\n`,
    'tsconfig.json': `${JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'ESNext', moduleResolution: 'Bundler', strict: true, noEmit: true }, include: ['src'] }, null, 2)}\n`,
  };
}

function titleOf(name: string): string {
  const title = name.split('-').map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join(' ');
  return title.length >= 2 ? title.slice(0, 30) : `${title} integration`;
}

import path from 'node:path';
import { bundleScript } from '../../src/cli/bundle';

export const FIXTURE_SCRIPT = path.join(__dirname, '..', '..', '..', 'test', 'fixtures', 'integration', 'src', 'index.ts');

/** A manifest for the fixture integration (component `counter`), with the given name, owner and visibility. */
export function fixtureManifest(name: string, organization: string, visibility: string, extra = ''): string {
  return [
    `name: ${name}`,
    'title: Counter',
    'description: Counts clicks.',
    `organization: ${organization}`,
    `visibility: ${visibility}`,
    'scopes: [space:content:read]',
    'blocks:',
    '  - id: counter',
    '    title: Counter',
    'configurations:',
    '  account:',
    '    properties:',
    '      api_key: { type: string, title: API key }',
    '      mode: { type: string, enum: [fast, safe], default: safe }',
    '    required: [api_key]',
    '  site:',
    '    properties:',
    '      theme: { type: string, enum: [light, dark] }',
    '    required: [theme]',
    extra,
  ].join('\n');
}

let bundled: Promise<string> | undefined;
export const fixtureBundle = (): Promise<string> => (bundled ??= bundleScript(FIXTURE_SCRIPT));

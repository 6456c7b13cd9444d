/**
 * The automatic JSX runtime (`integration-platform/runtime/jsx-runtime`): `<text>Hi</text>`
 * becomes the markup object `{type: 'text', children: ['Hi']}`, as GitBook's ContentKit
 * JSX does. A function tag is called with its props (a component of the author's); a
 * fragment is its children. Children are always an array, flattened, without the null,
 * undefined and booleans that conditional JSX (`{ok && <text/>}`) leaves.
 */

/** `<>…</>`: only compared with, never called as a tag. */
export function Fragment(): void {}

type Tag = string | typeof Fragment | ((props: Record<string, unknown>) => unknown);

function childrenOf(children: unknown): unknown[] | undefined {
  if (children === undefined) return undefined;
  return [children].flat(Infinity).filter((child) => child !== null && child !== undefined && typeof child !== 'boolean');
}

export function jsx(tag: Tag, props: Record<string, unknown>): unknown {
  const { children, ...rest } = props ?? {};
  const normalized = childrenOf(children);
  if (tag === Fragment) return normalized ?? [];
  if (typeof tag === 'function') return tag(props ?? {});
  return { type: tag, ...rest, ...(normalized && { children: normalized }) };
}

export const jsxs = jsx;
export const jsxDEV = jsx;

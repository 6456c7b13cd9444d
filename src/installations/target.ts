/** Where an installation lives: an organization, or a space or a site within it. */
export interface Target {
  org: string;
  space?: string;
  site?: string;
}

export type TargetKind = 'organization' | 'space' | 'site';

export function targetKind(target: Target): TargetKind {
  return target.site ? 'site' : target.space ? 'space' : 'organization';
}

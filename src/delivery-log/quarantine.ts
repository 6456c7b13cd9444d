import { sql, type Kysely } from 'kysely';

/**
 * Until the fan-out fix of 2026-11-22 (docs/decisions/tenancy.md), an event could be recorded for
 * installations of other organizations that shared its ingest flush, under their
 * organization: they could list, read and replay it, and a repeat of the event sent it to
 * them again. Those deliveries (and their replays) leave the log, with their attempts and
 * bodies; what the operator needs to tell who received whose events stays in
 * quarantined_deliveries, bodies excluded. A repeat of the event no longer names them.
 * One scan of the deliveries, at the upgrade.
 */
export async function quarantineCrossTenantDeliveries(db: Kysely<any>, now = Date.now()): Promise<void> {
  await db
    .insertInto('quarantined_deliveries')
    .columns(['id', 'event_id', 'installation_id', 'organization_id', 'event_organization_id', 'status', 'attempts', 'created_at', 'quarantined_at'])
    .expression(
      db
        .selectFrom('deliveries as d')
        .innerJoin('events as e', 'e.event_id', 'd.event_id')
        .whereRef('d.organization_id', '<>', 'e.organization_id')
        .select(['d.id', 'd.event_id', 'd.installation_id', 'd.organization_id', 'e.organization_id as event_organization_id', 'd.status', 'd.attempts', 'd.created_at', sql.lit(now).as('quarantined_at')]),
    )
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  const quarantined = db.selectFrom('quarantined_deliveries').select('id');
  await db.deleteFrom('attempts').where('delivery_id', 'in', quarantined).execute();
  await db.deleteFrom('deliveries').where('id', 'in', quarantined).execute();
  const ids = new Set((await quarantined.execute()).map((row: { id: string }) => row.id));
  const events = await db.selectFrom('events').select(['event_id', 'delivery_ids']).where('event_id', 'in', db.selectFrom('quarantined_deliveries').select('event_id')).execute();
  for (const { event_id, delivery_ids } of events as { event_id: string; delivery_ids: string }[]) {
    const kept = (JSON.parse(delivery_ids) as string[]).filter((id) => !ids.has(id));
    await db.updateTable('events').set({ delivery_ids: JSON.stringify(kept) }).where('event_id', '=', event_id).execute();
  }
}

"""Per-project webhooks: validated targets, signed deliveries, a delivery log.

- `services`: create, change and delete a project's webhooks (the target is checked on save).
- `selectors`: a project's webhooks with their last delivery, the delivery log, overdue deliveries.
- `outbox`: a delivery row is written in the same transaction as the model version it announces;
  the `webhook_deliver` task then makes one attempt per run through `outbox.delivery_attempt`.
- `transport`: the target check against internal addresses and the pinned HTTP client that posts
  to the address it checked; nothing of the database.
"""

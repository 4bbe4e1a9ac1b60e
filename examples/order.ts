import { RetryableError, defineTask, defineWorkflow, tagged } from '@baton/sdk';

interface Order {
  id: string;
  items: Array<{ sku: string; quantity: number }>;
  amountCents: number;
}

export const reserveInventory = defineTask('reserveInventory', async (_ctx, order: Order) => ({
  reserved: order.items.map((i) => i.sku),
}));

/** The payment provider is flaky: the first attempt of every charge fails and is retried. */
export const chargePayment = defineTask(
  'chargePayment',
  async (ctx, order: Order) => {
    if (ctx.attempt === 1) throw new RetryableError('payment provider timed out', { retryAfterMs: 200 });
    return { charged: order.amountCents, attempt: ctx.attempt };
  },
  { retry: { maxAttempts: 4, initialDelay: '200ms', backoffFactor: 2, maxDelay: '5s' } },
);

export const shipPackage = defineTask('shipPackage', async (_ctx, orderId: string) => ({
  trackingNumber: `TRK-${orderId}`,
}));

/** Ships a paid order; a child workflow of `ProcessOrder`, tagged with the order id. */
export const shipOrder = defineWorkflow('ShipOrder', async (ctx, orderId: string) => {
  const shipment = await ctx.run(shipPackage, orderId);
  return { orderId, ...shipment, shippedAt: ctx.now().toISOString() };
});

/** Reserves stock and charges the card in parallel (with retries), then ships in a child workflow. */
export const processOrder = defineWorkflow('ProcessOrder', async (ctx, order: Order) => {
  const [inventory, payment] = await Promise.all([ctx.run(reserveInventory, order), ctx.run(chargePayment, order)]);
  const shipment = await ctx.workflow(shipOrder, order.id, tagged(`order:${order.id}`));
  return { orderId: order.id, inventory, payment, shipment };
});

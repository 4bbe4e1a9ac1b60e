/** The example tasks and workflows that `npm start` runs a worker for. */
export { onboarding, sendReminderEmail, sendWelcomeEmail } from './onboarding.js';
export { chargePayment, processOrder, reserveInventory, shipOrder, shipPackage } from './order.js';

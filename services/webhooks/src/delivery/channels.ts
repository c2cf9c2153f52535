/** PostgreSQL notification channels (sent on commit): deliveries are due; a company's feed grew. */
export const DUE_CHANNEL = 'webhooks_due'
export const FEED_CHANNEL = 'webhooks_feed'

import Logging
import RedisClient

/// The listening side of the bus, for ``FanoutService``: the two pub/sub subscribers of `RedisClient`, one on the
/// classic control channel (``RedisSubscriber``) and one on the sharded user and app channels
/// (``RedisShardSubscriber``). They hold connections of their own in subscribe mode and send nothing but
/// (un)subscriptions, so they are the one Redis use outside the repositories here: the fan-out gets them built, never
/// the client.
struct BusFeed: Sendable {
    let configuration: RedisConfiguration
    let redis: RedisClient

    /// The subscribers, both reporting to `handler`.
    func subscribers(
        logger: Logger,
        handler: @escaping @Sendable (RedisPubSubEvent) -> Void
    ) -> (control: RedisSubscriber, shards: RedisShardSubscriber) {
        let control = RedisSubscriber(
            configuration: configuration,
            client: redis,
            channels: [BusChannels.control],
            logger: logger,
            handler: handler
        )
        return (control, RedisShardSubscriber(client: redis, logger: logger, handler: handler))
    }
}

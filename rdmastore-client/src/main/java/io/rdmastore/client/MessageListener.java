package io.rdmastore.client;

/**
 * Receives the messages of a {@link Subscription}. Called on the client's pub/sub delivery thread
 * ({@code rdmastore-client-pubsub}, one per client), never on a transport thread: a listener may block, at the cost of
 * delaying the client's later messages (they queue, in order; the server disconnects a subscriber whose unread
 * messages pass its pub/sub output limit).
 */
@FunctionalInterface
public interface MessageListener {
    void onMessage(PubSubMessage message);
}

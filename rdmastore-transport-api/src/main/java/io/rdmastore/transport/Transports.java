package io.rdmastore.transport;

/** Loads providers by class name, so the SPI never compiles against a provider (Ratis style). */
public final class Transports {
    /** The TCP provider's class. */
    public static final String TCP = "io.rdmastore.transport.tcp.TcpTransport";
    /** The UCX provider's class. */
    public static final String UCX = "io.rdmastore.transport.ucx.UcxTransport";

    private Transports() {
    }

    /**
     * Instantiates a provider through its public no-argument constructor (defaults from system properties).
     *
     * @throws TransportException when the class is missing or cannot be built
     */
    public static Transport load(String className) {
        try {
            return (Transport) Class.forName(className).getConstructor().newInstance();
        } catch (ReflectiveOperationException | LinkageError | ClassCastException e) {
            throw new TransportException("cannot load transport provider " + className + ": " + e, e);
        }
    }

    /**
     * Instantiates a provider with settings (keys documented by each provider, e.g. {@code memoryBudget}); a provider
     * without a {@code (java.util.Properties)} constructor gets its defaults.
     *
     * @throws TransportException when the class is missing, cannot be built, or a setting is invalid
     */
    public static Transport load(String className, java.util.Properties settings) {
        Class<?> type;
        try {
            type = Class.forName(className);
        } catch (ReflectiveOperationException | LinkageError e) {
            throw new TransportException("cannot load transport provider " + className + ": " + e, e);
        }
        try {
            return (Transport) type.getConstructor(java.util.Properties.class).newInstance(settings);
        } catch (NoSuchMethodException e) {
            return load(className);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw new TransportException("cannot build " + className + ": " + e.getCause().getMessage(), e.getCause());
        } catch (ReflectiveOperationException | LinkageError | ClassCastException e) {
            throw new TransportException("cannot load transport provider " + className + ": " + e, e);
        }
    }
}

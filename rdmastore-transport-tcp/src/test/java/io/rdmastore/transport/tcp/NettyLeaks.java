package io.rdmastore.transport.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Turns Netty's leak reports into test failures: the factory is installed before the first buffer class loads (each
 * test class calls {@link #install()} in its static initialiser) and {@link #collect()} forces collection and the
 * detector's polling. With {@code io.netty.leakDetection.level=paranoid} (the module's surefire setting) every buffer
 * is tracked.
 */
final class NettyLeaks {
    private static final List<String> LEAKS = new CopyOnWriteArrayList<>();

    static {
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new ResourceLeakDetectorFactory() {
            @Override
            @SuppressWarnings("deprecation")
            public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval,
                                                                       long maxActive) {
                return new ResourceLeakDetector<>(resource, samplingInterval) {
                    @Override
                    protected void reportTracedLeak(String resourceType, String records) {
                        LEAKS.add(resourceType + " leaked:" + records);
                        super.reportTracedLeak(resourceType, records);
                    }

                    @Override
                    protected void reportUntracedLeak(String resourceType) {
                        LEAKS.add(resourceType + " leaked (untraced)");
                        super.reportUntracedLeak(resourceType);
                    }
                };
            }
        });
    }

    private NettyLeaks() {
    }

    static void install() {
        // Loading this class installs the factory.
    }

    /** Leaks reported so far, after a few rounds of garbage collection and allocation. */
    static List<String> collect() throws InterruptedException {
        for (int round = 0; round < 3; round++) {
            System.gc();
            Thread.sleep(50);
            for (int i = 0; i < 64; i++) {
                ByteBuf b = PooledByteBufAllocator.DEFAULT.directBuffer(16);
                b.release();
            }
        }
        return List.copyOf(LEAKS);
    }
}

package io.rdmastore.cli;

import io.rdmastore.client.ClientConfig;
import java.time.Duration;
import picocli.CommandLine.Option;

/** Where a client command connects: a picocli mixin shared by {@code cli}, {@code put-file} and {@code get-file}. */
final class ServerOptions {
    @Option(names = {"-h", "--host"}, paramLabel = "HOST", defaultValue = "127.0.0.1",
        description = "Server host (default ${DEFAULT-VALUE}).")
    String host;
    @Option(names = {"-p", "--port"}, paramLabel = "PORT", defaultValue = "7379",
        description = "Server port (default ${DEFAULT-VALUE}).")
    int port;
    @Option(names = {"-t", "--transport"}, paramLabel = "T", defaultValue = "auto",
        description = "auto (best both ends share, default) | tcp | ucx (fail unless UCX is used).")
    String transport;
    @Option(names = {"-a", "--password"}, paramLabel = "PW", description = "Server password (or set the environment"
        + " variable " + ServerCommand.PASSWORD_ENV + ").")
    String password;

    /** The password given, else the environment's; null when neither is set. */
    String password() {
        String pw = password != null ? password : System.getenv(ServerCommand.PASSWORD_ENV);
        return pw == null || pw.isEmpty() ? null : pw;
    }

    /**
     * The client configuration these options describe.
     *
     * @throws UserException for a transport that does not exist
     */
    ClientConfig config(Duration timeout) {
        try {
            return new ClientConfig(host, port, Values.oneOf("--transport", transport, "auto", "tcp", "ucx"),
                password(), timeout);
        } catch (IllegalArgumentException e) {
            throw new UserException(e.getMessage(), e);
        }
    }
}

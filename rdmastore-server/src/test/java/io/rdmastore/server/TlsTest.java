package io.rdmastore.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmastore.client.RdmaStoreClient;
import io.rdmastore.client.RdmaStoreException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * TLS on the TCP port: native clients (over tcp, and over ucx, whose bootstrap is the TLS carrier) and RESP clients
 * connect with a certificate made at test time by the JDK's keytool; a client without TLS, or one that does not trust
 * the certificate, cannot connect.
 */
@Timeout(90)
class TlsTest {
    @TempDir
    static Path certs;
    static Path certificate;
    static Path key;
    static KeyStore trust;

    @TempDir
    Path dir;

    @BeforeAll
    static void makeSelfSignedCertificate() throws Exception {
        Path store = certs.resolve("server.p12");
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
            "-genkeypair", "-alias", "rdmastore", "-keyalg", "RSA", "-keysize", "2048", "-validity", "2",
            "-dname", "CN=localhost", "-ext", "SAN=dns:localhost,ip:127.0.0.1", "-keystore", store.toString(),
            "-storetype", "PKCS12", "-storepass", "changeit", "-keypass", "changeit").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, "keytool failed: " + out);
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(store)) {
            ks.load(in, "changeit".toCharArray());
        }
        Certificate cert = ks.getCertificate("rdmastore");
        Base64.Encoder b64 = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII));
        certificate = certs.resolve("server.pem");
        Files.writeString(certificate, "-----BEGIN CERTIFICATE-----\n" + b64.encodeToString(cert.getEncoded())
            + "\n-----END CERTIFICATE-----\n");
        key = certs.resolve("server.key");
        Files.writeString(key, "-----BEGIN PRIVATE KEY-----\n" + b64.encodeToString(ks.getKey("rdmastore",
            "changeit".toCharArray()).getEncoded()) + "\n-----END PRIVATE KEY-----\n");
        trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        trust.setCertificateEntry("rdmastore", cert);
    }

    static List<String> transports() {
        return TestServers.transports();
    }

    @ParameterizedTest
    @MethodSource("transports")
    void nativeClientsConnectWithTlsAndNotWithout(String transport) throws Exception {
        try (RdmaStoreServer server = TestServers.start(dir, c -> c.tls(certificate, key).password("pw"))) {
            try (RdmaStoreClient c = RdmaStoreClient.builder().port(server.port()).transport(transport)
                .password("pw").tls(certificate).timeout(Duration.ofSeconds(10)).connect()) {
                c.set("k", "v");
                assertEquals("v", c.get("k"));
                assertEquals(transport, c.transport());
            }
            assertThrows(RdmaStoreException.class, () -> RdmaStoreClient.builder().port(server.port())
                .transport(transport).password("pw").timeout(Duration.ofSeconds(3)).connect().close(),
                "a client without TLS must not get in");
            assertThrows(RdmaStoreException.class, () -> RdmaStoreClient.builder().port(server.port())
                .transport(transport).password("pw").tls(null).timeout(Duration.ofSeconds(3)).connect().close(),
                "a client that does not trust the certificate must not connect");
        }
    }

    @Test
    void respClientsSpeakTls() throws Exception {
        try (RdmaStoreServer server = TestServers.start(dir, c -> c.tls(certificate, key).password("pw"))) {
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trust);
            SSLContext ssl = SSLContext.getInstance("TLS");
            ssl.init(null, tmf.getTrustManagers(), null);
            try (SSLSocket s = (SSLSocket) ssl.getSocketFactory().createSocket("127.0.0.1", server.port())) {
                s.setSoTimeout(5000);
                s.getOutputStream().write("AUTH pw\r\nPING\r\n".getBytes(StandardCharsets.US_ASCII));
                assertEquals("+OK\r\n+PONG\r\n", new String(s.getInputStream().readNBytes(12),
                    StandardCharsets.US_ASCII));
            }
            // the same bytes in clear are not RESP to a TLS port: no reply, the connection ends
            try (java.net.Socket plain = new java.net.Socket("127.0.0.1", server.port())) {
                plain.setSoTimeout(5000);
                plain.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
                byte[] got = plain.getInputStream().readNBytes(7);
                assertTrue(!new String(got, StandardCharsets.US_ASCII).startsWith("+PONG"),
                    "a plain-text RESP client was answered on a TLS port");
            } catch (java.io.IOException e) {
                // reset by the server: also refused
            }
        }
    }
}

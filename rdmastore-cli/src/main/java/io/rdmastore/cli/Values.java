package io.rdmastore.cli;

import java.time.Duration;
import java.util.Locale;

/**
 * Parsing of setting values typed by people: numbers, sizes ({@code 64k}, {@code 16m}, {@code 1g}, {@code 512MiB}),
 * durations ({@code 500ms}, {@code 5s}, {@code 2m}), booleans and choices. Every failure is a {@link UserException}
 * naming the setting and the value. Stateless; any thread.
 */
final class Values {
    private Values() {
    }

    static long number(String name, String v, long min, long max) {
        long n;
        try {
            n = Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new UserException(name + " must be a whole number: '" + v + "'");
        }
        return inRange(name, v, n, min, max);
    }

    static long size(String name, String v, long min, long max) {
        String s = v.trim().toLowerCase(Locale.ROOT);
        if (s.endsWith("ib")) {
            s = s.substring(0, s.length() - 2);
        } else if (s.endsWith("b")) {
            s = s.substring(0, s.length() - 1);
        }
        int shift = 0;
        if (!s.isEmpty()) {
            switch (s.charAt(s.length() - 1)) {
                case 'k' -> shift = 10;
                case 'm' -> shift = 20;
                case 'g' -> shift = 30;
                case 't' -> shift = 40;
                default -> shift = 0;
            }
        }
        if (shift > 0) {
            s = s.substring(0, s.length() - 1);
        }
        long n;
        try {
            n = Long.parseLong(s.trim());
        } catch (NumberFormatException e) {
            throw new UserException(name + " must be a size like 4096, 64k, 16m or 1g: '" + v + "'");
        }
        if (n < 0 || (shift > 0 && n > (Long.MAX_VALUE >> shift))) {
            throw new UserException(name + " is out of range: '" + v + "'");
        }
        return inRange(name, v, n << shift, min, max);
    }

    static Duration duration(String name, String v) {
        String s = v.trim().toLowerCase(Locale.ROOT);
        try {
            Duration d;
            if (s.endsWith("ms")) {
                d = Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - 2)));
            } else if (s.endsWith("s")) {
                d = Duration.ofSeconds(Long.parseLong(s.substring(0, s.length() - 1)));
            } else if (s.endsWith("m")) {
                d = Duration.ofMinutes(Long.parseLong(s.substring(0, s.length() - 1)));
            } else {
                d = Duration.ofMillis(Long.parseLong(s));
            }
            if (d.isNegative() || d.isZero()) {
                throw new UserException(name + " must be positive: '" + v + "'");
            }
            return d;
        } catch (NumberFormatException e) {
            throw new UserException(name + " must be a duration like 500ms, 5s or 2m: '" + v + "'");
        }
    }

    static boolean bool(String name, String v) {
        return switch (v.trim().toLowerCase(Locale.ROOT)) {
            case "true", "yes", "on", "1" -> true;
            case "false", "no", "off", "0" -> false;
            default -> throw new UserException(name + " must be true or false: '" + v + "'");
        };
    }

    static String oneOf(String name, String v, String... choices) {
        String s = v.trim().toLowerCase(Locale.ROOT);
        for (String c : choices) {
            if (c.equals(s)) {
                return c;
            }
        }
        throw new UserException(name + " must be one of " + String.join(", ", choices) + ": '" + v + "'");
    }

    static String nonEmpty(String name, String v) {
        if (v.isBlank()) {
            throw new UserException(name + " must not be empty");
        }
        return v.trim();
    }

    private static long inRange(String name, String v, long n, long min, long max) {
        if (n < min || n > max) {
            throw new UserException(name + " must be between " + min + " and " + max + ": '" + v + "'");
        }
        return n;
    }
}

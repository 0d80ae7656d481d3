package io.rdmastore.cli;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code rdmastore bench ...}: hands every argument to {@code io.rdmastore.bench.BenchMain.main} (module
 * rdmastore-bench). Looked up by name, so the tool still builds and runs while the benchmarks are absent. Threads: runs
 * on the calling thread.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
    description = {"Runs the benchmarks (experiments E1..E7, tcp against ucx side by side); every argument goes to"
        + " io.rdmastore.bench.BenchMain.", "'rdmastore bench -- --help' shows the benchmarks' own options."})
final class BenchCommand implements Callable<Integer> {
    static final String BENCH_MAIN = "io.rdmastore.bench.BenchMain";

    @Parameters(paramLabel = "ARGS", arity = "0..*", description = "Arguments of the benchmark runner.")
    List<String> args = new ArrayList<>();

    @Override
    public Integer call() throws Exception {
        Method main;
        try {
            main = Class.forName(BENCH_MAIN).getMethod("main", String[].class);
        } catch (ClassNotFoundException | NoSuchMethodException e) {
            throw new UserException("the benchmark runner " + BENCH_MAIN + " is not on the class path (" + e
                + "); rebuild with 'mvn -q install -DskipTests' from the repository root");
        }
        try {
            main.invoke(null, (Object) args.toArray(String[]::new));
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof Exception ex) {
                throw ex;
            }
            throw e;
        }
        return 0;
    }
}

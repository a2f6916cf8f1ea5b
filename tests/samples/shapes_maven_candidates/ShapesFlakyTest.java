package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;

// Passes its build run and two runs alone, then fails its first run with the suite (its fourth
// run, counted in a file): dropped by pass_with_suite, when candidates pass two runs in a row.
class ShapesFlakyTest {
    @Test
    void signOfAHalf() throws Exception {
        Path counter = Paths.get("target", "flaky-runs");
        int run = Files.exists(counter) ? Integer.parseInt(Files.readString(counter).trim()) + 1 : 1;
        Files.writeString(counter, Integer.toString(run));
        assertNotEquals(4, run);
        assertEquals("positive", Shapes.sign(0.5));
    }
}

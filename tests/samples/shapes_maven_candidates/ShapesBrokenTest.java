package demo;

import org.junit.jupiter.api.Test;

// Calls a method Shapes does not have: dropped by build.
class ShapesBrokenTest {
    @Test
    void perimeter() {
        Shapes.perimeter(2, 3);
    }
}

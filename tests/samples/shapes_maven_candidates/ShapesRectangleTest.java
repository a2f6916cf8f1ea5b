package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

// Passes, but runs only what ShapesTest.areaOfASquare already runs: dropped by the coverage filter.
class ShapesRectangleTest {
    @Test
    void areaOfARectangle() {
        assertEquals(6.0, Shapes.area(2, 3));
    }
}

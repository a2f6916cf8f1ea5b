package demo;

public final class Shapes {
    private Shapes() {}

    public static String sign(double number) {
        if (number < 0) {
            return "negative";
        }
        if (number == 0) {
            return "zero";
        }
        return "positive";
    }

    public static double area(double width, double height) {
        if (width < 0 || height < 0) {
            throw new IllegalArgumentException("a side cannot be negative");
        }
        return width * height;
    }
}
